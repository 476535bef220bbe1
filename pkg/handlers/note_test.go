package handlers_test

import (
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// TestApproveNoteLimitIsCharacters: the documented limit of a decision's
// note is 2000 characters, not bytes: counsel writing in French or with
// typographic quotes gets the same room as in ASCII.
func TestApproveNoteLimitIsCharacters(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	note := strings.Repeat("é", 2000) // 2000 characters, 4000 bytes
	if utf8.RuneCountInString(note) != 2000 || len(note) != 4000 {
		t.Fatal("bad note")
	}
	resp := s.call(approveReq(t, h, "approve", h.hash).editBody(func(m map[string]any) { m["note"] = note }))
	if resp.StatusCode != 200 {
		t.Fatalf("a 2000-character note: %d %s", resp.StatusCode, resp.Body)
	}
	if w := decode[handlers.WarrantView](t, resp); w.Status != "approved" {
		t.Fatalf("%+v", w)
	}
	w, err := s.store.GetWarrant(t.Context(), fixFirm, h.runID, h.approvalID)
	if err == nil {
		w, err = agent.OpenWarrant(s.runKey(t, h.runID), w) // stored sealed
	}
	if err != nil || w.Note != note {
		t.Fatalf("stored note: %d characters, %v", utf8.RuneCountInString(w.Note), err)
	}
	// 2001 characters is refused (the table's "note too long" is ASCII).
	h2 := s.startHeld(t)
	before := s.scan()
	s.wantProblem("2001-character note",
		s.call(approveReq(t, h2, "approve", h2.hash).editBody(func(m map[string]any) { m["note"] = strings.Repeat("é", 2001) })), 400)
	s.wantUnchanged("2001-character note", before)
}

// TestApproveRolesAsAPIGatewayRendersThem: API Gateway renders both
// ["associate counsel"] (a title) and ["associate","counsel"] (two roles)
// as "[associate counsel]". The handlers read the roles from the token: the
// title is refused and writes nothing, the two roles may decide (issue 17,
// item 4).
func TestApproveRolesAsAPIGatewayRendersThem(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	before := s.scan()
	title := approveReq(t, h, "approve", h.hash).roles("associate counsel")
	if got := title.obj("requestContext.authorizer.jwt.claims")["roles"]; got != "[associate counsel]" {
		t.Fatalf("rendered claim %q", got)
	}
	s.wantProblem("a title made of role words", s.call(title), 401)
	s.wantUnchanged("a title made of role words", before)
	resp := s.call(approveReq(t, h, "approve", h.hash).roles("associate", "counsel"))
	if resp.StatusCode != 200 {
		t.Fatalf(`approve with roles ["associate","counsel"]: %d %s`, resp.StatusCode, resp.Body)
	}
}

// TestRolesTheEdgeAcceptsTheLedgerRecords: a role name the API accepts from
// a token is one run.started records (httpapi's rule is contracts'), so a
// caller the edge lets in can start a run; at the rule's edges too.
func TestRolesTheEdgeAcceptsTheLedgerRecords(t *testing.T) {
	s := newStack(t, stackOptions{})
	for _, roles := range [][]string{
		{"associate"},
		{"_x", "Senior_Associate-2", strings.Repeat("r", 64)},
		{},
	} {
		resp := s.post(fixture(t, "invoke.json").roles(roles...))
		if resp.StatusCode != 202 {
			t.Fatalf("roles %q: %d %s", roles, resp.StatusCode, resp.Body)
		}
		st := s.auditRun(decode[handlers.RunView](t, resp).RunID)
		if !slices.Equal(st.UserRoles, roles) && !(len(roles) == 0 && len(st.UserRoles) == 0) {
			t.Fatalf("run.started roles %q, want %q", st.UserRoles, roles)
		}
	}
}
