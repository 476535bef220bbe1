package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// DefaultMaxBodyBytes is the body limit when Config.MaxBodyBytes is unset.
const DefaultMaxBodyBytes = 256 << 10

// RoleCounsel is the role that may approve warrants.
const RoleCounsel = contracts.RoleCounsel

// Config names the JWT claims the authorizer passes through and bounds
// request bodies. The zero value is usable: every unset field gets its default.
type Config struct {
	FirmClaim    string // default "firm_id"
	UserClaim    string // default "sub"
	RolesClaim   string // default "roles"
	MaxBodyBytes int    // decoded bytes; default DefaultMaxBodyBytes
}

func (c Config) withDefaults() Config {
	if c.FirmClaim == "" {
		c.FirmClaim = "firm_id"
	}
	if c.UserClaim == "" {
		c.UserClaim = "sub"
	}
	if c.RolesClaim == "" {
		c.RolesClaim = "roles"
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return c
}

// Principal is the authenticated caller. It only ever comes from claims
// that API Gateway verified, never from a request body.
type Principal struct {
	FirmID, UserID string
	Roles          []string
	// Name is the caller's display name: the verified token's "name"
	// claim, else its "email" (contracts.DisplayName; "" when neither is
	// fit to show). Shown to people and recorded, never used to authorize.
	Name string
}

// HasRole reports whether the caller holds role r (exact, case-sensitive).
func (p Principal) HasRole(r string) bool { return slices.Contains(p.Roles, r) }

// IsCounsel reports whether the caller holds RoleCounsel.
func (p Principal) IsCounsel() bool { return p.HasRole(RoleCounsel) }

// Principal reads the caller. Firm and user are the JWT authorizer's
// claims; the roles are the roles claim of the token the authorizer
// verified, read from the request's bearer token exactly as the issuer wrote
// it, because payload format 2.0 flattens an array claim into a string that
// loses its elements' boundaries: ["associate counsel"] and
// ["associate","counsel"] both arrive as "[associate counsel]" (issue 17,
// item 4). The token must be the one the authorizer verified: its user and
// firm claims must equal the authorizer's, or the request fails closed.
//
// A missing authorizer, claim or token is unauthenticated: a route deployed
// without the authorizer must not serve anyone. Errors name the claim or
// header, never its value. A token without a roles claim has no roles; one
// whose roles claim is not a JSON array of role names is refused (see
// tokenRoles).
func (c Config) Principal(req events.APIGatewayV2HTTPRequest) (Principal, error) {
	c = c.withDefaults()
	auth := req.RequestContext.Authorizer
	if auth == nil || auth.JWT == nil {
		return Principal{}, failure.New(failure.KindUnauthenticated, "request carries no verified JWT")
	}
	claims := auth.JWT.Claims
	firm, err := uuidClaim(claims, c.FirmClaim)
	if err != nil {
		return Principal{}, err
	}
	user := claims[c.UserClaim] // a nil map reads as missing
	if user == "" {
		return Principal{}, failure.New(failure.KindUnauthenticated, "claim "+c.UserClaim+" is missing")
	}
	if contracts.CheckUserID("", user) != nil {
		return Principal{}, failure.New(failure.KindUnauthenticated, "claim "+c.UserClaim+
			" must be a user id: 1 to 128 letters, digits and . _ - @ | : + = (set USER_CLAIM to the claim that holds one, e.g. oid for Entra ID)")
	}
	token, err := bearerPayload(req.Headers)
	if err != nil {
		return Principal{}, err
	}
	for _, name := range []string{c.UserClaim, c.FirmClaim} {
		var v string
		if raw, ok := token[name]; !ok || contracts.DecodeStrict(raw, &v) != nil || v != claims[name] {
			return Principal{}, failure.New(failure.KindUnauthenticated,
				"claim "+name+" of the bearer token does not match the authorizer's: the token is not the one it verified")
		}
	}
	roles, err := tokenRoles(token, c.RolesClaim)
	if err != nil {
		return Principal{}, err
	}
	name := contracts.DisplayName(claims["name"])
	if name == "" {
		name = contracts.DisplayName(claims["email"])
	}
	return Principal{FirmID: firm, UserID: user, Roles: roles, Name: name}, nil
}

func uuidClaim(claims map[string]string, name string) (string, error) {
	v := claims[name] // a nil map reads as missing
	if v == "" {
		return "", failure.New(failure.KindUnauthenticated, "claim "+name+" is missing")
	}
	if !isCanonicalUUID(v) {
		return "", failure.New(failure.KindUnauthenticated, "claim "+name+" must be a canonical lowercase UUID")
	}
	return v, nil
}

// isCanonicalUUID is the service's one UUID check (contracts.CheckUUID): only
// the lowercase 8-4-4-4-12 form, so one id has one spelling in keys, logs
// and comparisons.
func isCanonicalUUID(s string) bool { return contracts.CheckUUID("", s) == nil }

// maxTokenBytes bounds the Authorization header read: API Gateway limits a
// request's headers to 10 KiB.
const maxTokenBytes = 10 << 10

// bearerPayload returns the members of the JWT in the Authorization header:
// "Bearer <jwt>" or the bare token, the two forms API Gateway's JWT
// authorizer accepts. Only the payload is read; the signature is API
// Gateway's to check, and it did before the function was invoked. The
// payload must be a JSON object held to the service's strict decoding (no
// duplicate members, which two parsers could read differently).
func bearerPayload(headers map[string]string) (map[string]json.RawMessage, error) {
	h, ok := Header(headers, "authorization")
	if !ok || h == "" {
		return nil, failure.New(failure.KindUnauthenticated, "header Authorization carries no bearer token")
	}
	if len(h) > maxTokenBytes {
		return nil, failure.New(failure.KindUnauthenticated, "header Authorization is too long")
	}
	if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		h = rest
	}
	parts := strings.Split(h, ".")
	if len(parts) != 3 || !isBase64URL(parts[0]) || !isBase64URL(parts[1]) || !isBase64URL(parts[2]) {
		return nil, failure.New(failure.KindUnauthenticated, "header Authorization does not hold a compact JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, failure.New(failure.KindUnauthenticated, "header Authorization: the JWT's payload is not base64url")
	}
	var payload map[string]json.RawMessage
	if err := contracts.DecodeStrict(b, &payload); err != nil || payload == nil {
		// Not err's text: its path would name the token's members.
		return nil, failure.New(failure.KindUnauthenticated, "header Authorization: the JWT's payload is not a strict JSON object")
	}
	return payload, nil
}

// isBase64URL reports whether s uses only the unpadded base64url alphabet.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// tokenRoles reads the roles claim of a token's payload exactly: absent is
// no roles; otherwise it must be a JSON array of role names. A role name is
// what run.started records as user_roles (pkg/contracts): letters, digits,
// '_' or '-', starting with a letter or '_', at most 64 bytes. A claim with
// anything else ("associate counsel", a string instead of an array, null) is
// refused as a whole rather than partly read: dropping a role could change a
// policy decision that weighs roles, and recording it is impossible.
func tokenRoles(payload map[string]json.RawMessage, claim string) ([]string, error) {
	raw, ok := payload[claim]
	if !ok {
		return nil, nil
	}
	malformed := failure.New(failure.KindUnauthenticated, "claim "+claim+" of the bearer token must be a JSON array of role names (letters, digits, '_' or '-')")
	var roles []string
	if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "[") || contracts.DecodeStrict(raw, &roles) != nil {
		return nil, malformed
	}
	for _, r := range roles {
		if !contracts.IsRoleName(r) {
			return nil, malformed
		}
	}
	return roles, nil
}
