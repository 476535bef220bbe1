package httpapi

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

const (
	firmID = "4f1c2b7a-9d3e-4a5b-8c6d-0e1f2a3b4c5d"
	userID = "0b7c2f4e-3c1d-4a8e-9f6b-2d5e8a1c7f90"
)

func withClaims(claims map[string]string) events.APIGatewayV2HTTPRequest {
	var req events.APIGatewayV2HTTPRequest
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	}
	return req
}

func kindOf(err error) failure.Kind {
	k, _, _ := failure.Classify(err)
	return k
}

func TestPrincipalClaims(t *testing.T) {
	upper := strings.ToUpper(firmID)
	tests := []struct {
		name    string
		cfg     Config
		req     events.APIGatewayV2HTTPRequest
		want    Principal
		wantErr string // substring of the message; "" means success
		leak    string // a value the message must not contain
	}{
		{name: "valid", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID, "roles": []string{"counsel"}}),
			want: Principal{FirmID: firmID, UserID: userID, Roles: []string{"counsel"}}},
		{name: "no roles claim means no roles", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID}),
			want: Principal{FirmID: firmID, UserID: userID}},
		{name: "custom claim names",
			cfg:  Config{FirmClaim: "custom:firm", UserClaim: "uid", RolesClaim: "cognito:groups"},
			req:  asAPIGateway(t, map[string]any{"custom:firm": firmID, "uid": userID, "cognito:groups": []string{"counsel", "paralegal"}, "firm_id": "x"}),
			want: Principal{FirmID: firmID, UserID: userID, Roles: []string{"counsel", "paralegal"}}},
		{name: "nil authorizer", req: events.APIGatewayV2HTTPRequest{}, wantErr: "no verified JWT"},
		{name: "nil JWT", req: func() events.APIGatewayV2HTTPRequest {
			var r events.APIGatewayV2HTTPRequest
			r.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				Lambda: map[string]any{"firm_id": firmID, "sub": userID},
			}
			return r
		}(), wantErr: "no verified JWT"},
		{name: "nil claims", req: withClaims(nil), wantErr: "claim firm_id is missing"},
		{name: "firm missing", req: withClaims(map[string]string{"sub": userID}), wantErr: "claim firm_id is missing"},
		{name: "firm empty", req: withClaims(map[string]string{"firm_id": "", "sub": userID}), wantErr: "claim firm_id is missing"},
		{name: "user missing", req: withClaims(map[string]string{"firm_id": firmID}), wantErr: "claim sub is missing"},
		{name: "firm not a UUID", req: withClaims(map[string]string{"firm_id": "acme-llp-secret", "sub": userID}),
			wantErr: "claim firm_id must be a canonical lowercase UUID", leak: "acme-llp-secret"},
		{name: "firm upper case", req: withClaims(map[string]string{"firm_id": upper, "sub": userID}),
			wantErr: "claim firm_id must be a canonical", leak: upper},
		{name: "firm urn form", req: withClaims(map[string]string{"firm_id": "urn:uuid:" + firmID, "sub": userID}),
			wantErr: "claim firm_id must be a canonical", leak: firmID},
		{name: "firm braces", req: withClaims(map[string]string{"firm_id": "{" + firmID + "}", "sub": userID}),
			wantErr: "claim firm_id must be a canonical"},
		// Issue 27 item 12: a user id is the identity provider's, opaque.
		{name: "Cognito: sub is a UUID", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID, "cognito:groups": []string{"counsel"}}),
			cfg: Config{RolesClaim: "cognito:groups"}, want: Principal{FirmID: firmID, UserID: userID, Roles: []string{"counsel"}}},
		{name: "Entra ID: the user is oid (a GUID; sub is pairwise)", cfg: Config{UserClaim: "oid"},
			req: asAPIGateway(t, map[string]any{"firm_id": firmID, "oid": "00000000-0000-0000-0000-00000000000a",
				"sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ", "roles": []string{"counsel"}}),
			want: Principal{FirmID: firmID, UserID: "00000000-0000-0000-0000-00000000000a", Roles: []string{"counsel"}}},
		{name: "Okta: sub is 00u…", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": "00u1ab2cd3EF4gh5i6j7", "groups": []string{"counsel"}}),
			cfg: Config{RolesClaim: "groups"}, want: Principal{FirmID: firmID, UserID: "00u1ab2cd3EF4gh5i6j7", Roles: []string{"counsel"}}},
		{name: "Auth0: sub is auth0|…", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": "auth0|5fe435b5"}),
			want: Principal{FirmID: firmID, UserID: "auth0|5fe435b5"}},
		{name: "user with a space", req: withClaims(map[string]string{"firm_id": firmID, "sub": "jane doe"}),
			wantErr: "claim sub must be a user id", leak: "jane doe"},
		{name: "user too long", req: withClaims(map[string]string{"firm_id": firmID, "sub": strings.Repeat("u", 129)}),
			wantErr: "claim sub must be a user id", leak: strings.Repeat("u", 129)},
		{name: "no bearer token", req: withClaims(map[string]string{"firm_id": firmID, "sub": userID, "roles": "[counsel]"}),
			wantErr: "header Authorization carries no bearer token"},
		{name: "roles malformed", req: asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID, "roles": "counsel"}),
			wantErr: "claim roles of the bearer token must be a JSON array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.Principal(tc.req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Principal: %v", err)
				}
				if got.FirmID != tc.want.FirmID || got.UserID != tc.want.UserID || !slices.Equal(got.Roles, tc.want.Roles) {
					t.Fatalf("Principal = %+v, want %+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Principal = %+v, want error", got)
			}
			if k := kindOf(err); k != failure.KindUnauthenticated {
				t.Errorf("kind = %s, want unauthenticated", k)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if tc.leak != "" && strings.Contains(err.Error(), tc.leak) {
				t.Errorf("error %q echoes the claim value", err)
			}
			if got.FirmID != "" || got.UserID != "" || got.Roles != nil {
				t.Errorf("partial principal %+v returned with an error", got)
			}
		})
	}
}

// The roles claim is the token's, read exactly: a JSON array of role names
// (run.started's rule: letters, digits, '_' or '-'). What API Gateway made
// of it in the authorizer's claims plays no part. A role is never granted
// because a longer role merely contains its word (issue 11, item 4; issue
// 17, item 4); anything else is refused and the caller is unauthenticated.
func TestPrincipalRolesFormats(t *testing.T) {
	tests := []struct {
		name string
		raw  string // the roles member of the token's payload, as JSON; "" leaves it out
		want []string
		ok   bool
	}{
		{"array", `["counsel","associate"]`, []string{"counsel", "associate"}, true},
		{"array spaced", ` [ "counsel" , "associate" ] `, []string{"counsel", "associate"}, true},
		{"single", `["counsel"]`, []string{"counsel"}, true},
		{"empty array", `[]`, []string{}, true},
		{"absent", ``, nil, true},
		{"any role name", `["billing","Senior_Associate-2"]`, []string{"billing", "Senior_Associate-2"}, true},
		{"case variant is another role", `["Counsel"]`, []string{"Counsel"}, true},

		{"title made of role words", `["associate counsel"]`, nil, false},
		{"multi-word role", `["of counsel"]`, nil, false},
		{"bracketed role name", `["[not counsel]"]`, nil, false},
		{"api gateway's rendering as a string", `"[counsel associate]"`, nil, false},
		{"a string", `"counsel"`, nil, false},
		{"a json array in a string", `"[\"counsel\"]"`, nil, false},
		{"null", `null`, nil, false},
		{"object", `{"counsel":true}`, nil, false},
		{"non-strings", `["counsel",5]`, nil, false},
		{"empty element", `["counsel",""]`, nil, false},
		{"leading digit", `["2nd-chair"]`, nil, false},
		{"too long", `["` + strings.Repeat("a", 65) + `"]`, nil, false},
		{"non-ascii", `["cöunsel"]`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"firm_id":"` + firmID + `","sub":"` + userID + `"`
			if tc.raw != "" {
				payload += `,"roles":` + tc.raw
			}
			req := withClaims(map[string]string{"firm_id": firmID, "sub": userID, "roles": "[counsel]"})
			req.Headers = map[string]string{"authorization": rawBearer(payload + "}")}
			p, err := Config{}.Principal(req)
			if !tc.ok {
				if err == nil || kindOf(err) != failure.KindUnauthenticated {
					t.Fatalf("Principal(roles %s) = %+v, %v; want unauthenticated", tc.raw, p, err)
				}
				if strings.Contains(err.Error(), "counsel") {
					t.Fatalf("the error echoes the claim: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Principal(roles %s): %v", tc.raw, err)
			}
			if !slices.Equal(p.Roles, tc.want) {
				t.Fatalf("Roles(%s) = %q, want %q", tc.raw, p.Roles, tc.want)
			}
			if p.IsCounsel() != slices.Contains(tc.want, "counsel") {
				t.Fatalf("IsCounsel(%s) = %v", tc.raw, p.IsCounsel())
			}
		})
	}
}

// The bearer token must be a compact JWT whose payload is a strict JSON
// object, and the one the authorizer verified: its user and firm claims are
// the authorizer's. Anything else fails closed, naming the header or claim,
// never its value.
func TestPrincipalBearerToken(t *testing.T) {
	claims := map[string]string{"firm_id": firmID, "sub": userID, "roles": "[counsel]"}
	good := `{"firm_id":"` + firmID + `","sub":"` + userID + `","roles":["counsel"]}`
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name, header, wantErr string
	}{
		{"bare token", strings.TrimPrefix(rawBearer(good), "Bearer "), ""},
		{"lower-case scheme", "bearer " + strings.TrimPrefix(rawBearer(good), "Bearer "), ""},
		{"unsigned (local)", "Bearer " + enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(good)) + ".", ""},

		{"missing", "", "carries no bearer token"},
		{"another scheme", "Basic " + enc([]byte("a:b")), "does not hold a compact JWT"},
		{"two segments", "Bearer " + enc([]byte(`{}`)) + "." + enc([]byte(good)), "does not hold a compact JWT"},
		{"five segments (JWE)", rawBearer(good) + ".x.y", "does not hold a compact JWT"},
		{"two tokens joined", rawBearer(good) + "," + rawBearer(good), "does not hold a compact JWT"},
		{"padded payload", "Bearer e30." + base64.URLEncoding.EncodeToString([]byte(good+" ")) + ".c2ln", "does not hold a compact JWT"},
		{"payload not JSON", "Bearer e30." + enc([]byte("counsel")) + ".c2ln", "not a strict JSON object"},
		{"payload an array", "Bearer e30." + enc([]byte(`["counsel"]`)) + ".c2ln", "not a strict JSON object"},
		{"duplicate roles member", rawBearer(`{"firm_id":"` + firmID + `","sub":"` + userID + `","roles":["associate"],"roles":["counsel"]}`), "not a strict JSON object"},
		{"another user's token", rawBearer(`{"firm_id":"` + firmID + `","sub":"11111111-1111-4111-8111-111111111111","roles":["counsel"]}`), "claim sub of the bearer token does not match"},
		{"another firm's token", rawBearer(`{"firm_id":"11111111-1111-4111-8111-111111111111","sub":"` + userID + `","roles":["counsel"]}`), "claim firm_id of the bearer token does not match"},
		{"token without the firm", rawBearer(`{"sub":"` + userID + `","roles":["counsel"]}`), "claim firm_id of the bearer token does not match"},
		{"firm as a number", rawBearer(`{"firm_id":5,"sub":"` + userID + `"}`), "claim firm_id of the bearer token does not match"},
		{"too long", "Bearer " + strings.Repeat("a", 11<<10), "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := withClaims(claims)
			if tc.header != "" {
				req.Headers = map[string]string{"authorization": tc.header}
			}
			p, err := Config{}.Principal(req)
			if tc.wantErr == "" {
				if err != nil || !p.IsCounsel() || p.UserID != userID {
					t.Fatalf("Principal = %+v, %v", p, err)
				}
				return
			}
			if err == nil || kindOf(err) != failure.KindUnauthenticated || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Principal = %+v, %v; want unauthenticated %q", p, err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "1111") {
				t.Fatalf("the error echoes a claim: %v", err)
			}
		})
	}
}

func TestPrincipalHasRole(t *testing.T) {
	p := Principal{Roles: []string{"associate", "counsel"}}
	if !p.IsCounsel() || !p.HasRole("associate") {
		t.Errorf("%+v: IsCounsel=%v HasRole(associate)=%v", p, p.IsCounsel(), p.HasRole("associate"))
	}
	for _, q := range []Principal{{}, {Roles: []string{"Counsel"}}, {Roles: []string{"counsel-admin"}}} {
		if q.IsCounsel() {
			t.Errorf("%+v is counsel; roles match exactly", q)
		}
	}
}
