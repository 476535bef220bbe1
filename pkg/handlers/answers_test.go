package handlers_test

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// answers records every answer a handler gave in this package's tests, by
// route, status and (for problems) failure kind. The OpenAPI test holds
// docs/openapi.yaml to it: every documented answer produced by some test
// request, every produced answer documented.
var answers = &answerLog{seen: map[string]map[int]map[string]bool{}}

type answerLog struct {
	mu   sync.Mutex
	seen map[string]map[int]map[string]bool // route -> status -> problem kind ("" for a success)
	// all is every answer in full, for the OpenAPI test to check bodies and
	// headers against the documented schemas.
	all []answer
}

type answer struct {
	route string
	resp  events.APIGatewayV2HTTPResponse
}

func (a *answerLog) record(route string, resp events.APIGatewayV2HTTPResponse) {
	kind := ""
	if resp.Headers["Content-Type"] == "application/problem+json" {
		var p struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal([]byte(resp.Body), &p)
		kind = p.Kind
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[route] == nil {
		a.seen[route] = map[int]map[string]bool{}
	}
	if a.seen[route][resp.StatusCode] == nil {
		a.seen[route][resp.StatusCode] = map[string]bool{}
	}
	a.seen[route][resp.StatusCode][kind] = true
	a.all = append(a.all, answer{route: route, resp: resp})
}

// statuses returns the statuses seen for route, sorted.
func (a *answerLog) statuses(route string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for st := range a.seen[route] {
		out = append(out, st)
	}
	slices.Sort(out)
	return out
}

// kinds returns the problem kinds seen for route and status, sorted.
func (a *answerLog) kinds(route string, status int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for k := range a.seen[route][status] {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
