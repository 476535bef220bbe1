package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// bearer is a compact JWT carrying payload (unsigned: the function never
// checks the signature, API Gateway's authorizer did).
func bearer(t *testing.T, payload map[string]any) string {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return "Bearer " + enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(b) + "." + enc.EncodeToString([]byte("sig"))
}

// rawBearer is a compact JWT whose payload is exactly payload's bytes.
func rawBearer(payload string) string {
	enc := base64.RawURLEncoding
	return "Bearer " + enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString([]byte("sig"))
}

// asAPIGateway is the request API Gateway hands the function for a token
// whose payload is claims: the header as sent, the claims as the authorizer
// renders them (an array as its elements in brackets, space separated).
func asAPIGateway(t *testing.T, claims map[string]any) events.APIGatewayV2HTTPRequest {
	t.Helper()
	rendered := map[string]string{}
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			rendered[k] = v
		case []string:
			s := "["
			for i, e := range v {
				if i > 0 {
					s += " "
				}
				s += e
			}
			rendered[k] = s + "]"
		}
	}
	req := withClaims(rendered)
	req.Headers = map[string]string{"authorization": bearer(t, claims)}
	return req
}

// TestRoleTitlesAreNotRoles: API Gateway renders ["associate counsel"] and
// ["associate","counsel"] alike, "[associate counsel]". The roles come from
// the token the authorizer verified, read exactly, so a title made of role
// words grants nothing, while the two roles grant counsel (issue 17, item 4).
func TestRoleTitlesAreNotRoles(t *testing.T) {
	title := asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID, "roles": []string{"associate counsel"}})
	two := asAPIGateway(t, map[string]any{"firm_id": firmID, "sub": userID, "roles": []string{"associate", "counsel"}})
	if a, b := title.RequestContext.Authorizer.JWT.Claims["roles"], two.RequestContext.Authorizer.JWT.Claims["roles"]; a != b {
		t.Fatalf("the test's rendering differs: %q, %q", a, b)
	}
	if p, err := (Config{}).Principal(title); err == nil && p.IsCounsel() {
		t.Fatalf(`["associate counsel"] is counsel: %+v`, p)
	}
	p, err := Config{}.Principal(two)
	if err != nil || !p.IsCounsel() || !p.HasRole("associate") {
		t.Fatalf(`["associate","counsel"]: %+v, %v; want counsel and associate`, p, err)
	}
}
