package desk_test

import (
	"slices"
	"testing"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 29: counsel sees why an e-mail is held when an address came from a
// document. The provenance rule names the value by its pointer (its reason
// never quotes it); the desk shows the value at that pointer, from the same
// input the fields show, before the reason. A pointer that leads nowhere in
// the input shows no value (the reason alone).
func TestDeskShowsWhereADestinationCameFrom(t *testing.T) {
	const (
		id       = "5d0c1e2d-0000-4000-8000-0000000000a9"
		injected = "records@hf-archive.example"
		reason   = "the email at /bcc/0 appears only in tool results, first in the result of search_matter_documents at seq 4"
	)
	in := emailInput()
	in["bcc"] = []string{injected}
	w := emailWarrant(t, id, in)
	w.FiredRules = append(w.FiredRules,
		handlers.FiredRuleView{ID: "provenance.untrusted_destination", Effect: "raise:high", Reason: reason, Pointer: "/bcc/0"},
		handlers.FiredRuleView{ID: "provenance.unknown_destination", Effect: "raise:high", Reason: "the email at /bcc/7 appears in no source of the run", Pointer: "/bcc/7"})
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{catalogTool(t, emailTool)}
	ctx := openDesk(t, f)
	click(t, ctx, wsel(id)+" .warrant-toggle")
	got := evalIn[[]string](t, ctx, `(() => {
		const li = (p) => document.querySelector('`+wsel(id)+` .fired-rules li[data-pointer="' + p + '"]');
		const a = li('/bcc/0'), b = li('/bcc/7');
		return [a?.querySelector('.rule-value-text')?.textContent ?? '<none>', a?.querySelector('.rule-reason')?.textContent ?? '<none>',
			a?.textContent.indexOf('`+injected+`') < a?.textContent.indexOf('appears only') ? 'value first' : 'reason first',
			b ? String(b.querySelectorAll('.rule-value').length) : '<no rule>', b?.querySelector('.rule-reason')?.textContent ?? '<none>'];
	})()`)
	want := []string{injected, reason, "value first", "0", "the email at /bcc/7 appears in no source of the run"}
	if !slices.Equal(got, want) {
		t.Fatalf("the provenance rules shown %q\nwant %q", got, want)
	}
	browsertest.CheckAxe(t, ctx, "a warrant held on a destination from a document")
}
