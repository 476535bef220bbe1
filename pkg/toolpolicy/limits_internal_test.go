package toolpolicy

import (
	"encoding/json"
	"slices"
	"testing"
)

// An overlay disables a limit by id, as it disables a rule (the embedded
// policy has no limits today, so the overlay is applied to one that has).
func TestOverlayDisablesALimit(t *testing.T) {
	base, err := Load([]byte(`{"version":"t1","default":{"tier":"high","reason":"unlisted"},
		"tools":{"draft":{"tier":"medium","reason":"drafts"}},
		"limits":[{"id":"drafts.a","tools":["draft"],"per":"run","window":"hour","max":1,"then":"deny","reason":"one"},
		          {"id":"drafts.b","tools":["draft"],"per":"firm","window":"day","max":9,"then":"raise:high","reason":"nine"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	q, err := base.overlay(&overlayFile{Extends: "embedded", Version: "o1", Disable: []string{"drafts.a"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.LimitIDs(); !slices.Equal(got, []string{"drafts.b"}) {
		t.Errorf("limits after the overlay: %v", got)
	}
	d, err := q.Decide(Call{Tool: "draft", Input: json.RawMessage(`{}`)})
	if err != nil || len(d.Limits) != 1 || d.Limits[0].ID != "drafts.b" {
		t.Errorf("charges under the overlay: %+v %v", d.Limits, err)
	}
	if d, _ := base.Decide(Call{Tool: "draft", Input: json.RawMessage(`{}`)}); len(d.Limits) != 2 {
		t.Errorf("the overlay changed the policy it extends: %+v", d.Limits)
	}
}
