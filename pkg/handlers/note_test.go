package handlers_test

import (
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

// TestApproveRolesAsAPIGatewayRendersThem: a counsel who holds several roles
// arrives as "[associate counsel]" and may decide.
func TestApproveRolesAsAPIGatewayRendersThem(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	resp := s.call(approveReq(t, h, "approve", h.hash).claim("roles", "[associate counsel]"))
	if resp.StatusCode != 200 {
		t.Fatalf("approve with roles [associate counsel]: %d %s", resp.StatusCode, resp.Body)
	}
}
