// Package policytest builds risk policies for tests: the embedded policy
// with some of its rules changed, as a deployment might change it.
package policytest

import (
	"encoding/json"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Denying is the embedded policy with the named rules' effect turned to
// deny, under version, as a policy changed after a hold would be.
func Denying(t testing.TB, version string, ruleIDs ...string) *toolpolicy.Policy {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range doc["rules"].([]any) {
		rule := r.(map[string]any)
		for _, id := range ruleIDs {
			if rule["id"] == id {
				rule["then"] = "deny"
				delete(rule, "restates_floor") // a deny restates no floor
				found++
			}
		}
	}
	if found != len(ruleIDs) {
		t.Fatalf("policytest: the embedded policy lacks some of %v", ruleIDs)
	}
	return load(t, doc, version)
}

// WithRule is the embedded policy with rule (a rule object of the policy
// file, as JSON) appended, under version.
func WithRule(t testing.TB, version, rule string) *toolpolicy.Policy {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var r any
	if err := json.Unmarshal([]byte(rule), &r); err != nil {
		t.Fatal(err)
	}
	doc["rules"] = append(doc["rules"].([]any), r)
	return load(t, doc, version)
}

// load loads doc, the embedded policy changed, under version.
func load(t testing.TB, doc map[string]any, version string) *toolpolicy.Policy {
	t.Helper()
	doc["version"] = version
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := toolpolicy.LoadDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
