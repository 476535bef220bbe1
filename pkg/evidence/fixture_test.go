package evidence_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// The in-package bundle fixtures: a run that files a court document under
// counsel's warrant, its receipts signed with a local key, a firm log that
// holds them between another run's entries, and a checkpoint. Built in
// memory in milliseconds, so Verify's checks are pinned here and not only by
// pkg/handlers' stack tests.
const (
	fxFirm     = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	fxRun      = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	fxOtherRun = "6c1d7b3f-8e5a-4d9f-8b62-1c9a3a4d2e02"
	fxMatter   = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	fxUser     = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	fxCounsel  = "c0c0c0c0-1111-4222-8333-444455556666"
	fxApproval = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	fxEffect   = "1d2c3b4a-5e6f-4789-8abc-def012345678"
)

// fxStart is when the fixture run starts; its line n is written n-1
// seconds later.
var fxStart = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// Seqs of the fixture run's lines that call for receipts.
const (
	fxSeqStart  = 1
	fxSeqEffect = 8  // tool.completed of the filing, under counsel's warrant
	fxSeqEnd    = 11 // run.completed
)

var fxFilingInput = json.RawMessage(`{"matter_id":"` + fxMatter + `","court":"SF Superior","title":"Motion to compel"}`)

// filingLedger is the fixture run's ledger: started, held for counsel's
// warrant on a court filing, released, the filing executed (seq 8) and,
// when ended, a last turn and run.completed (seq 11).
func filingLedger(t testing.TB, ended bool) []contracts.Line {
	t.Helper()
	hash, err := contracts.InputHash(fxFilingInput)
	if err != nil {
		t.Fatal(err)
	}
	const tool, useID = "file_court_document", "tooluse_filing"
	events := []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: "m", PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: fxMatter, UserID: fxUser,
			History: []contracts.HistoryMessage{{Role: contracts.RoleUser, Text: "File the motion."}}},
		&contracts.TurnCompleted{Turn: 1, Text: "I will file the motion.", StopReason: "tool_use", Content: []contracts.ContentBlock{
			{Type: contracts.BlockText, Text: "I will file the motion."},
			{Type: contracts.BlockToolUse, ToolUseID: useID, Name: tool, Input: fxFilingInput}}},
		&contracts.ModelUsage{Turn: 1, ModelID: "m", CostUSD: "0.009735", Usage: contracts.Usage{InputTokens: 1200, OutputTokens: 350}},
		&contracts.ToolRequested{Turn: 1, ToolUseID: useID, ToolName: tool, Input: fxFilingInput, InputSHA256: hash,
			RiskTier: "high", Action: "require_approval", Reason: "a filing needs a warrant", MatchedPolicy: "tools." + tool, PolicyVersion: "2026-12-03"},
		&contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: fxApproval, ToolUseID: useID, ToolName: tool,
			ToolInput: fxFilingInput, ToolInputHash: hash, RiskTier: "high", Reason: "needs a lawyer's warrant",
			HumanSummary: "File the motion to compel", ExpiresAt: "2026-12-04T10:00:00.000Z"}},
		&contracts.ApprovalDecided{ApprovalRequestID: fxApproval, Decision: warrant.DecisionApproved, DecidedBy: fxCounsel,
			ToolInputHash: hash, Note: "Approved as drafted.", RequestedBy: fxUser, Separation: contracts.SeparationEnforced,
			DecidedAs: contracts.RoleCounsel},
		&contracts.RunReleased{ApprovalRequestID: fxApproval, Decision: warrant.DecisionApproved, EffectRef: fxEffect},
		&contracts.ToolCompleted{ToolUseID: useID, ToolName: tool, InputSHA256: hash, Status: contracts.ToolSuccess,
			EffectRef: fxEffect, Result: json.RawMessage(`{"filing_id":"F-1"}`)},
	}
	if ended {
		events = append(events,
			&contracts.TurnCompleted{Turn: 2, Text: "The motion is filed.", StopReason: "end_turn",
				Content: []contracts.ContentBlock{{Type: contracts.BlockText, Text: "The motion is filed."}}},
			&contracts.ModelUsage{Turn: 2, ModelID: "m", CostUSD: "0.005742", Usage: contracts.Usage{InputTokens: 900, OutputTokens: 120}},
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "The motion is filed."})
	}
	c := contracts.NewChain(fxRun, fxFirm)
	var lines []contracts.Line
	for i, e := range events {
		c.Now = func() time.Time { return fxStart.Add(time.Duration(i) * time.Second) }
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// derive is evidence.Derive that must succeed.
func derive(t testing.TB, lines []contracts.Line) []evidence.Receipt {
	t.Helper()
	rs, err := evidence.Derive(lines)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// lineAt is when the fixture's line seq was written.
func lineAt(seq int64) time.Time { return fxStart.Add(time.Duration(seq-1) * time.Second) }

// firmLog is a firm log as the issuer appends it, with what it records.
type firmLog struct {
	entries  []evidence.Entry
	receipts map[int64]evidence.Signed // by entry index
}

// other appends another run's entry at at.
func (l *firmLog) other(at time.Time) {
	l.entries = append(l.entries, evidence.Entry{Index: int64(len(l.entries)) + 1, At: contracts.FormatTime(at), RunID: fxOtherRun,
		Seq: int64(len(l.entries)) + 3, Kind: evidence.KindEffect, ReceiptSHA256: strings.Repeat("ab", 32)})
}

// issue signs r with k half a second after the line it covers and appends
// its entry.
func (l *firmLog) issue(t testing.TB, k evidence.Signer, r evidence.Receipt) evidence.Signed {
	t.Helper()
	at := contracts.FormatTime(lineAt(r.Seq).Add(500 * time.Millisecond))
	s, err := evidence.Issue(context.Background(), k, r, at)
	if err != nil {
		t.Fatal(err)
	}
	l.log(r, s, at)
	return s
}

// log appends the entry of s, a receipt saying r, at at.
func (l *firmLog) log(r evidence.Receipt, s evidence.Signed, at string) {
	e := evidence.Entry{Index: int64(len(l.entries)) + 1, At: at, RunID: r.RunID, Seq: r.Seq, Kind: r.Kind, ReceiptSHA256: s.SHA256()}
	l.entries = append(l.entries, e)
	if l.receipts == nil {
		l.receipts = map[int64]evidence.Signed{}
	}
	l.receipts[e.Index] = s
}

// bundle is the run's bundle: lines, the receipts the log records for the
// run from entry from on, that stretch of the log, and a checkpoint k signs
// at cpAt over the whole log.
func (l *firmLog) bundle(t testing.TB, k evidence.Signer, lines []contracts.Line, from int64, cpAt time.Time) evidence.Bundle {
	t.Helper()
	h, prev := evidence.Genesis, evidence.Genesis
	seg := evidence.Segment{From: from, Entries: []string{}}
	rs := []evidence.Signed{}
	for _, e := range l.entries {
		if e.Index == from {
			prev = h
		}
		h = evidence.Link(h, e.Line())
		if e.Index >= from {
			seg.Entries = append(seg.Entries, e.Line())
			if s, ok := l.receipts[e.Index]; ok && e.RunID == fxRun {
				rs = append(rs, s)
			}
		}
	}
	seg.Prev = prev
	cp, err := evidence.SignCheckpoint(context.Background(), k, evidence.Checkpoint{FirmID: fxFirm, Number: 1,
		Size: int64(len(l.entries)), Head: h, CreatedAt: contracts.FormatTime(cpAt)})
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]string, len(lines))
	for i, ln := range lines {
		raw[i] = string(ln.Raw)
	}
	return evidence.Bundle{Schema: evidence.BundleSchema, FirmID: fxFirm, RunID: fxRun, Ledger: raw, Receipts: rs,
		Log: seg, Checkpoint: &cp, KeyIDs: []string{k.KeyID()}}
}

// completedBundle issues receipts rs of the ended fixture run with k into a
// firm log that holds another run's entries before, between and after them,
// and answers the run's bundle (its segment from the run's start entry,
// entry 2) under a checkpoint signed a minute after the run ended.
func completedBundle(t testing.TB, k evidence.Signer, lines []contracts.Line, rs []evidence.Receipt) evidence.Bundle {
	t.Helper()
	var l firmLog
	l.other(fxStart.Add(-10 * time.Minute))
	for i, r := range rs {
		l.issue(t, k, r)
		if i == 0 {
			l.other(lineAt(r.Seq).Add(time.Second))
		}
	}
	l.other(lineAt(fxSeqEnd).Add(2 * time.Second))
	return l.bundle(t, k, lines, 2, lineAt(fxSeqEnd).Add(time.Minute))
}

// newKey is a fresh local signing key and its public half.
func newKey(t testing.TB) (*evidence.P256, evidence.PublicKey) {
	t.Helper()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := evidence.NewPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return k, pub
}

// cloneBundle is a deep copy of b.
func cloneBundle(t testing.TB, b evidence.Bundle) evidence.Bundle {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var out evidence.Bundle
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFixtureVerifies: the honest fixture bundle verifies, complete, with
// the run's three receipts; the tampering tests edit copies of it.
func TestFixtureVerifies(t *testing.T) {
	k, pub := newKey(t)
	lines := filingLedger(t, true)
	rs := derive(t, lines)
	if len(rs) != 3 || rs[0].Seq != fxSeqStart || rs[1].Seq != fxSeqEffect || rs[2].Seq != fxSeqEnd ||
		rs[1].Authority != evidence.AuthorityWarrant || rs[1].DecidedBy != fxCounsel {
		t.Fatalf("Derive: %+v", rs)
	}
	b := completedBundle(t, k, lines, rs)
	rep, err := evidence.Verify(b, evidence.KeySet{}.Add(pub))
	if err != nil || !rep.Complete || !rep.StartAnchored || len(rep.Receipts) != 3 || rep.Covered != fxSeqEnd || rep.Pending != "" {
		t.Fatalf("the honest bundle: %v %+v", err, rep)
	}
}
