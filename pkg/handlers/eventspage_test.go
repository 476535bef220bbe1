package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"

	"github.com/seed-f6d3920e/warrant"
)

// lambdaMaxPayload is Lambda's limit on a synchronous response payload.
const lambdaMaxPayload = 6 << 20 // 6,291,456 bytes

// ledgerStore is a RunsStore holding one run and its ledger in memory,
// paging as the dynamo store pages (lines after afterSeq, at most limit,
// and whether more remain). The stack's minidyn store would serve as well,
// but moving megabytes through it takes tens of seconds under -race.
type ledgerStore struct {
	run   warrant.Run
	items []warrant.LedgerItem
}

func (m *ledgerStore) GetRun(_ context.Context, firm, run string) (warrant.Run, error) {
	if firm != m.run.FirmID || run != m.run.RunID {
		return warrant.Run{}, warrant.ErrNotFound
	}
	return m.run, nil
}

func (m *ledgerStore) ReadLedger(_ context.Context, firm, run string, afterSeq int64, limit int) ([]warrant.LedgerItem, bool, error) {
	if firm != m.run.FirmID || run != m.run.RunID {
		return nil, false, nil
	}
	var out []warrant.LedgerItem
	for _, it := range m.items {
		if it.Seq <= afterSeq {
			continue
		}
		if limit > 0 && len(out) == limit {
			return out, true, nil
		}
		out = append(out, it)
	}
	return out, false, nil
}

func (m *ledgerStore) FirmPendingWarrants(context.Context, string, *warrant.Warrant, int) iter.Seq2[warrant.Warrant, error] {
	return func(func(warrant.Warrant, error) bool) {}
}

func (m *ledgerStore) GetFirmSettings(_ context.Context, firm string) (warrant.FirmSettings, error) {
	return warrant.DefaultFirmSettings(firm), nil
}

func (m *ledgerStore) GetBudget(_ context.Context, firm, month string, _ int) (warrant.Budget, error) {
	return warrant.Budget{FirmID: firm, Month: month}, nil
}

// bigLedger is a run whose ledger is run.started and one tool.completed
// line per size, each result full of characters JSON escapes ('"' twice
// over, '<', '>', '&', U+2028), served by the stack's runs handler.
func bigLedger(t *testing.T, s *stack, sizes []int) (*handlers.Runs, string, [][]byte) {
	t.Helper()
	runID := uuid.NewString()
	chain := contracts.NewChain(runID, fixFirm)
	first, err := chain.Append(&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: testModel,
		PromptVersion: "p1", SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: fixMatter,
		UserID: fixUser, History: []contracts.HistoryMessage{}, CounselMessage: "Summarize the docket."})
	if err != nil {
		t.Fatal(err)
	}
	store := &ledgerStore{run: warrant.Run{FirmID: fixFirm, RunID: runID, MatterID: fixMatter, UserID: fixUser,
		AgentKey: "matter_assistant", ModelID: testModel}}
	store.items = append(store.items, warrant.LedgerItem{Seq: first.Seq, Raw: first.Raw})
	lines := [][]byte{first.Raw}
	for i, n := range sizes {
		text := strings.Repeat(`"`, n) + "<&>\u2028"
		result, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			t.Fatal(err)
		}
		l, err := chain.Append(&contracts.ToolCompleted{ToolUseID: "tu_" + strconv.Itoa(i), ToolName: "search_docket",
			InputSHA256: strings.Repeat("ab", 32), Status: contracts.ToolSuccess, Result: result})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(l.Raw, []byte(`\"<&>`)) || len(l.Raw) > contracts.MaxLineBytes {
			t.Fatalf("line %d: %d bytes, not the line this test means to store", l.Seq, len(l.Raw))
		}
		store.items = append(store.items, warrant.LedgerItem{Seq: l.Seq, Raw: l.Raw})
		lines = append(lines, l.Raw)
	}
	runs := *s.runs // wired as functions/runs wires it
	runs.Store = store
	return &runs, runID, lines
}

// eventsPage invokes GET /v1/runs/{run_id}/events through aws-lambda-go as
// the runtime does and returns the response and the payload's size.
func eventsPage(t *testing.T, h *handlers.Runs, runID string, query map[string]string) (events.APIGatewayV2HTTPResponse, int) {
	t.Helper()
	e := fixture(t, "get-run-events.json").runPath(runID, "").query(query)
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), e.bytes(t))
	if err != nil {
		t.Fatalf("handler returned error: %v", err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response does not decode: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %.300s", resp.StatusCode, resp.Body)
	}
	return resp, len(out)
}

// TestEventsPagesFitLambdaPayload: a ledger whose lines together serialize
// past Lambda's 6 MB response limit is paged by bytes as well as by count:
// every page's payload fits, and following X-Next-After-Seq returns every
// line exactly once, in order.
func TestEventsPagesFitLambdaPayload(t *testing.T) {
	s := newStack(t, stackOptions{})
	// Lines of 2 bytes per '"' (up to 400 KiB), 4 once serialized.
	h, runID, want := bigLedger(t, s, []int{190_000, 120_000, 40_000, 200_000, 190_000, 120_000, 40_000, 200_000,
		190_000, 120_000, 40_000, 200_000, 190_000})

	// Precondition: one page of the whole ledger would not fit.
	var whole bytes.Buffer
	enc := json.NewEncoder(&whole)
	enc.SetEscapeHTML(false) // as aws-lambda-go writes the response
	if err := enc.Encode(string(bytes.Join(want, []byte("\n"))) + "\n"); err != nil {
		t.Fatal(err)
	}
	if whole.Len() <= lambdaMaxPayload {
		t.Fatalf("the ledger serializes to only %d bytes; the test needs more than %d", whole.Len(), lambdaMaxPayload)
	}

	var got [][]byte
	after, pages := "0", 0
	for {
		pages++
		if pages > len(want) {
			t.Fatalf("%d pages for %d lines", pages, len(want))
		}
		resp, size := eventsPage(t, h, runID, map[string]string{"after_seq": after})
		if size > lambdaMaxPayload {
			t.Errorf("page %d (after_seq %s): payload %d bytes, over Lambda's %d", pages, after, size, lambdaMaxPayload)
		}
		if !strings.HasSuffix(resp.Body, "\n") {
			t.Fatalf("page %d: body does not end with a newline", pages)
		}
		page := bytes.Split([]byte(strings.TrimSuffix(resp.Body, "\n")), []byte("\n"))
		got = append(got, page...)
		next, more := resp.Headers["X-Next-After-Seq"]
		if !more {
			break
		}
		if next != strconv.Itoa(len(got)) { // seqs are 1..n
			t.Fatalf("page %d: X-Next-After-Seq %q after %d lines", pages, next, len(got))
		}
		after = next
	}
	if pages < 2 {
		t.Errorf("one page for a ledger of %d serialized bytes", whole.Len())
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines over %d pages, want %d", len(got), pages, len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d differs from the ledger's", i+1)
		}
	}
	t.Logf("%d lines, %d serialized bytes, in %d pages", len(want), whole.Len(), pages)

	// A page cut by count says where to continue, as before.
	resp, _ := eventsPage(t, h, runID, map[string]string{"limit": "2"})
	if n := strings.Count(resp.Body, "\n"); n != 2 || resp.Headers["X-Next-After-Seq"] != "2" {
		t.Errorf("limit=2: %d lines, X-Next-After-Seq %q", n, resp.Headers["X-Next-After-Seq"])
	}
	// The last line alone, with nothing after it: no X-Next-After-Seq.
	resp, _ = eventsPage(t, h, runID, map[string]string{"after_seq": strconv.Itoa(len(want) - 1)})
	if _, more := resp.Headers["X-Next-After-Seq"]; more || resp.Body != string(want[len(want)-1])+"\n" {
		t.Errorf("last page: X-Next-After-Seq %v, %d bytes", more, len(resp.Body))
	}
}
