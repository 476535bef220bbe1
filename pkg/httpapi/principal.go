package httpapi

import (
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
}

// HasRole reports whether the caller holds role r (exact, case-sensitive).
func (p Principal) HasRole(r string) bool { return slices.Contains(p.Roles, r) }

// IsCounsel reports whether the caller holds RoleCounsel.
func (p Principal) IsCounsel() bool { return p.HasRole(RoleCounsel) }

// Principal reads the caller from the JWT authorizer's claims. A missing
// authorizer or claim fails closed as unauthenticated: a route deployed
// without the authorizer must not serve anyone. Errors name the claim,
// never its value. A missing roles claim means no roles.
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
	user, err := uuidClaim(claims, c.UserClaim)
	if err != nil {
		return Principal{}, err
	}
	roles, ok := parseRoles(claims[c.RolesClaim])
	if !ok {
		return Principal{}, failure.New(failure.KindUnauthenticated, "claim "+c.RolesClaim+" is malformed")
	}
	return Principal{FirmID: firm, UserID: user, Roles: roles}, nil
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

// RoleTokens is the closed set of role names a roles claim may carry in API
// Gateway's flattened form. The set is what makes that form unambiguous: an
// array claim ["of counsel"] arrives as "[of counsel]", exactly like
// ["of","counsel"]; "of" is not a role token, so the claim is refused rather
// than read as granting counsel.
var RoleTokens = []string{RoleCounsel, "associate", "paralegal", "partner", "staff", "admin"}

// parseRoles reads a roles claim exactly. Payload format 2.0 carries claims
// as map[string]string, and API Gateway renders an array claim as its
// elements inside brackets, separated by single spaces, without quotes:
// ["counsel","associate"] arrives as "[counsel associate]". Accepted:
//
//   - a JSON array of non-empty strings (a token or harness that stringifies
//     the claim as JSON), each element a role as it is, spaces and all;
//   - the bracket form or a single bare token, every token in RoleTokens;
//   - an empty claim or "[]": no roles.
//
// Anything else is malformed, and the caller fails closed rather than guess.
func parseRoles(raw string) (roles []string, ok bool) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "" || s == "[]":
		return nil, true
	case strings.HasPrefix(s, "[") && strings.HasPrefix(strings.TrimSpace(s[1:]), `"`):
		var list []string
		if err := contracts.DecodeStrict([]byte(s), &list); err != nil {
			return nil, false
		}
		for _, r := range list {
			if r == "" {
				return nil, false
			}
		}
		return list, true
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		roles = strings.Split(s[1:len(s)-1], " ")
	default:
		roles = []string{s} // a bare claim is one token
	}
	for _, r := range roles {
		if !slices.Contains(RoleTokens, r) {
			return nil, false
		}
	}
	return roles, true
}
