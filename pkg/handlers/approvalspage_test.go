package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// lambdaPayloadLimit is Lambda's limit on a synchronous response payload
// (6 MB).
const lambdaPayloadLimit = 6 << 20

// approvalsList is GET /v1/approvals' answer.
type approvalsList struct {
	Approvals []handlers.WarrantView `json:"approvals"`
	Next      string                 `json:"next"`
}

// approvalsPage invokes GET /v1/approvals through aws-lambda-go as the
// runtime does, with the query given (and the event's firm changed by
// edit, when set), and returns the answer and the payload's size.
func approvalsPage(t *testing.T, s *stack, query map[string]string, edit func(*event)) (events.APIGatewayV2HTTPResponse, int) {
	t.Helper()
	ev := fixture(t, "list-approvals.json").query(query)
	if edit != nil {
		edit(ev)
	}
	out, err := lambda.NewHandler(s.runs.Handle).Invoke(context.Background(), ev.bytes(t))
	if err != nil {
		t.Fatalf("handler returned error: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response does not decode: %v", err)
	}
	answers.record(ev.route(), resp)
	return resp, len(out)
}

// allApprovals follows next from the first page with the query given and
// returns every page, checking each payload fits Lambda's.
func allApprovals(t *testing.T, s *stack, query map[string]string) []approvalsList {
	t.Helper()
	var pages []approvalsList
	q := map[string]string{"status": "pending"}
	for k, v := range query {
		q[k] = v
	}
	for len(pages) < 20 {
		resp, size := approvalsPage(t, s, q, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d: %d %.300s", len(pages)+1, resp.StatusCode, resp.Body)
		}
		if size > lambdaPayloadLimit {
			t.Fatalf("page %d: a payload of %d bytes; Lambda refuses over %d", len(pages)+1, size, lambdaPayloadLimit)
		}
		page := decode[approvalsList](t, resp)
		pages = append(pages, page)
		if page.Next == "" {
			return pages
		}
		q["next"] = page.Next
	}
	t.Fatal("more than 20 pages")
	return nil
}

// TestApprovalsPagesFitLambdaPayload: pending warrants whose inputs
// together pass Lambda's 6 MB answer are listed in pages, each within it,
// each input once (tool_input_canonical, which hashes to tool_input_hash;
// no tool_input beside it), and following next lists every warrant once,
// oldest first.
func TestApprovalsPagesFitLambdaPayload(t *testing.T) {
	// Quotes: 2 bytes each in the canonical input, 4 in the answer's body,
	// 8 in the Lambda payload that carries the body as a string.
	filing := bigFiling("Motion to Compel", strings.Repeat(`"`, 130_000))
	s := newStack(t, stackOptions{script: bigFilingScript(filing)})
	var held []string
	for range 7 {
		s.clock.Advance(time.Second) // oldest first is the order they were held in
		held = append(held, heldOn(t, s.startBig(t)).approvalID)
	}
	pages := allApprovals(t, s, nil)
	var listed []handlers.WarrantView
	for _, p := range pages {
		listed = append(listed, p.Approvals...)
	}
	if len(pages) < 2 {
		t.Errorf("%d page(s) for 7 warrants of %d bytes each: not paged by size", len(pages), canonicalSize(t, filing))
	}
	var ids []string
	for _, w := range listed {
		ids = append(ids, w.ApprovalRequestID)
		if len(w.ToolInput) != 0 {
			t.Errorf("%s: the list carries tool_input beside tool_input_canonical", w.ApprovalRequestID)
		}
		if h, err := contracts.InputHash(json.RawMessage(w.ToolInputCanonical)); err != nil || h != w.ToolInputHash {
			t.Errorf("%s: tool_input_canonical hashes to %s (%v), the warrant's hash is %s", w.ApprovalRequestID, h, err, w.ToolInputHash)
		}
	}
	if !slices.Equal(ids, held) {
		t.Errorf("listed %v, want each held warrant once, oldest first: %v", ids, held)
	}
	// Precondition: the whole list as one page would not fit.
	whole, _ := json.Marshal(map[string]any{"approvals": listed})
	payload, _ := json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: string(whole)})
	if len(payload) <= lambdaPayloadLimit {
		t.Fatalf("the 7 warrants make a payload of %d bytes as one page: this test needs more than %d", len(payload), lambdaPayloadLimit)
	}
}

// TestApprovalsPagedByLimit: limit bounds a page; next is given exactly
// when more warrants follow, and the last page has none.
func TestApprovalsPagedByLimit(t *testing.T) {
	s := newStack(t, stackOptions{})
	var held []string
	for range 3 {
		s.clock.Advance(time.Second)
		held = append(held, s.startHeld(t).approvalID)
	}
	pages := allApprovals(t, s, map[string]string{"limit": "2"})
	if len(pages) != 2 || len(pages[0].Approvals) != 2 || pages[0].Next == "" || len(pages[1].Approvals) != 1 || pages[1].Next != "" {
		t.Fatalf("pages of 2 for 3 warrants: %s", shape(pages))
	}
	var ids []string
	for _, p := range pages {
		for _, w := range p.Approvals {
			ids = append(ids, w.ApprovalRequestID)
		}
	}
	if !slices.Equal(ids, held) {
		t.Errorf("listed %v, want %v", ids, held)
	}
	if pages := allApprovals(t, s, map[string]string{"limit": "3"}); len(pages) != 1 || pages[0].Next != "" {
		t.Errorf("a page that holds all: %s, want one page and no next", shape(pages))
	}
}

// shape says how many warrants each page holds and whether it has a next.
func shape(pages []approvalsList) string {
	var out []string
	for _, p := range pages {
		out = append(out, fmt.Sprintf("%d warrants, next %t", len(p.Approvals), p.Next != ""))
	}
	return strings.Join(out, "; ")
}

// TestApprovalsCursorRefused: a cursor from another firm's list, or one
// that is not a cursor the list gave, is a 400 naming next, and lists
// nothing.
func TestApprovalsCursorRefused(t *testing.T) {
	s := newStack(t, stackOptions{})
	for range 2 {
		s.startHeld(t)
	}
	resp, _ := approvalsPage(t, s, map[string]string{"limit": "1"}, nil)
	next := decode[approvalsList](t, resp).Next
	if resp.StatusCode != 200 || next == "" {
		t.Fatalf("first page: %d %.300s", resp.StatusCode, resp.Body)
	}
	if resp, _ := approvalsPage(t, s, map[string]string{"next": next}, nil); resp.StatusCode != 200 {
		t.Fatalf("the firm's own cursor: %d %.300s", resp.StatusCode, resp.Body)
	}
	otherFirmsCaller := func(e *event) { e.claim("firm_id", otherFirm) }
	for name, c := range map[string]struct {
		cursor string
		edit   func(*event)
	}{
		"another firm's cursor":        {next, otherFirmsCaller},
		"not base64":                   {"not a cursor!", nil},
		"not JSON":                     {"bm90IGpzb24", nil},
		"a cursor with a member added": {strings.TrimRight(next, "=") + "e30", nil},
		"too long":                     {strings.Repeat("A", 2000), nil},
		"empty":                        {"", nil},
	} {
		resp, _ := approvalsPage(t, s, map[string]string{"next": c.cursor}, c.edit)
		p := s.wantProblem(name, resp, 400)
		if p.Kind != "invalid_request" || !strings.Contains(p.Detail, "next") {
			t.Errorf("%s: %s %q; want invalid_request naming next", name, p.Kind, p.Detail)
		}
		if strings.Contains(resp.Body, "approval_request_id") {
			t.Errorf("%s: the refusal lists warrants: %s", name, resp.Body)
		}
	}
}
