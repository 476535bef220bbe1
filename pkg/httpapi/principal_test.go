package httpapi

import (
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
		{name: "valid", req: withClaims(map[string]string{"firm_id": firmID, "sub": userID, "roles": "[counsel]"}),
			want: Principal{FirmID: firmID, UserID: userID, Roles: []string{"counsel"}}},
		{name: "no roles claim means no roles", req: withClaims(map[string]string{"firm_id": firmID, "sub": userID}),
			want: Principal{FirmID: firmID, UserID: userID}},
		{name: "custom claim names",
			cfg:  Config{FirmClaim: "custom:firm", UserClaim: "uid", RolesClaim: "cognito:groups"},
			req:  withClaims(map[string]string{"custom:firm": firmID, "uid": userID, "cognito:groups": "[counsel paralegal]", "firm_id": "x"}),
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
		{name: "user not a UUID (e.g. auth0|123)", req: withClaims(map[string]string{"firm_id": firmID, "sub": "auth0|5fe435b5"}),
			wantErr: "claim sub must be a canonical", leak: "auth0|5fe435b5"},
		{name: "roles malformed", req: withClaims(map[string]string{"firm_id": firmID, "sub": userID, "roles": `["counsel"`}),
			wantErr: "claim roles is malformed"},
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

// The roles claim is parsed exactly: a JSON array of strings, or API
// Gateway's rendering of an array claim ("[a b]") whose every token is one of
// the role tokens (RoleTokens). A role is never granted because a longer role
// merely contains its word (issue 11, item 4); anything else is malformed and
// the caller is unauthenticated.
func TestPrincipalRolesFormats(t *testing.T) {
	two := []string{"counsel", "associate"}
	tests := []struct {
		name string
		raw  string
		want []string
		ok   bool
	}{
		// What API Gateway HTTP API actually delivers for ["counsel","associate"].
		{"api gateway rendering", "[counsel associate]", two, true},
		{"api gateway single", "[counsel]", []string{"counsel"}, true},
		{"api gateway empty array", "[]", nil, true},
		{"json array", `["counsel","associate"]`, two, true},
		{"json array spaced", ` [ "counsel" , "associate" ] `, two, true},
		{"json array keeps a multi-word role whole", `["of counsel"]`, []string{"of counsel"}, true},
		{"json array of brackets is a role name", `["[not counsel]"]`, []string{"[not counsel]"}, true},
		{"single token", "counsel", []string{"counsel"}, true},
		{"empty", "", nil, true},
		{"whitespace", "  ", nil, true},

		{"multi-word role flattened by api gateway", "[of counsel]", nil, false},
		{"bracketed role name flattened", "[[not counsel]]", nil, false},
		{"unknown token", "[counsel billing]", nil, false},
		{"uuid groups are not role tokens", "[11111111-1111-4111-8111-111111111111]", nil, false},
		{"space separated string", "counsel associate", nil, false},
		{"comma separated string", "counsel,associate", nil, false},
		{"multi-word string", "of counsel", nil, false},
		{"case variant token", "[Counsel]", nil, false},
		{"double space", "[counsel  associate]", nil, false},
		{"unterminated bracket", "[counsel associate", nil, false},
		{"stray bracket", "counsel]", nil, false},
		{"bad json", `["counsel",]`, nil, false},
		{"json non-strings", `["counsel", 5]`, nil, false},
		{"json empty element", `["counsel",""]`, nil, false},
		{"json duplicate-free object", `{"counsel":true}`, nil, false},
		{"stray quote", `[counsel "associate]`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Config{}.Principal(withClaims(map[string]string{"firm_id": firmID, "sub": userID, "roles": tc.raw}))
			if !tc.ok {
				if err == nil || kindOf(err) != failure.KindUnauthenticated {
					t.Fatalf("Principal(%q) = %+v, %v; want unauthenticated", tc.raw, p, err)
				}
				if strings.Contains(err.Error(), tc.raw) && tc.raw != "" {
					t.Fatalf("the error echoes the claim: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Principal(%q): %v", tc.raw, err)
			}
			if !slices.Equal(p.Roles, tc.want) {
				t.Fatalf("Roles(%q) = %q, want %q", tc.raw, p.Roles, tc.want)
			}
			if p.IsCounsel() != slices.Contains(tc.want, "counsel") {
				t.Fatalf("IsCounsel(%q) = %v", tc.raw, p.IsCounsel())
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
