package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"

	"github.com/seed-f6d3920e/warrant"
)

func kind(err error) failure.Kind {
	k, _, _ := failure.Classify(err)
	return k
}

// closedEndpoint is a loopback URL nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return url
}

// TestUnreachableStoreIsStoreUnavailable calls every exported operation with
// valid input against an endpoint that refuses connections: the store itself
// classifies the SDK's transport failure, so each comes back as a retryable
// store_unavailable rather than internal.
func TestUnreachableStoreIsStoreUnavailable(t *testing.T) {
	e := newEnv(t, dynamotest.Minidyn(t)) // only to build valid input
	h := e.newHeld(id())
	r := e.newRun(id())
	tc := newToolCall(t, "send_email")

	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(closedEndpoint(t)),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		Retryer:      aws.NopRetryer{},
	})
	dead := dynamo.New(client, e.table, dynamo.WithClock(e.clock.Now))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fresh := &run{firm: id(), id: id(), matter: id(), user: id()}
	fresh.chain = contracts.NewChain(fresh.id, fresh.firm)
	started := e.line(fresh, &contracts.RunStarted{AgentKey: "drafting", Mode: contracts.ModeInvoke, ModelID: "m",
		PromptVersion: "p", SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1,
		MatterID: fresh.matter, UserID: fresh.user, History: []contracts.HistoryMessage{}})
	held := *h.run.chain
	warrantLines := func() []contracts.Line {
		c := *r.chain
		other := newToolCall(t, "file_court_document")
		req, err := c.Append(requested(other, "require_approval"))
		must(t, err)
		blocked, err := c.Append(&contracts.RunBlocked{Approval: contracts.BlockedApproval{
			ApprovalRequestID: id(), ToolUseID: other.useID, ToolName: other.name, ToolInput: other.input, ToolInputHash: other.hash,
			RiskTier: "high", Reason: "r", HumanSummary: "s", ExpiresAt: contracts.FormatTime(e.clock.Now().Add(time.Hour))}})
		must(t, err)
		return []contracts.Line{req, blocked}
	}
	decided, err := held.Next(&contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: warrant.DecisionApproved,
		DecidedBy: "counsel-1", ToolInputHash: h.tool.hash})
	must(t, err)
	claim, released := e.resume(h, warrant.DecisionApproved)
	w := e.warrant(h)
	w.RunID, w.ApprovalID = r.id, id()
	w.FirmID = r.firm

	ops := map[string]func() error{
		"CreateRun": func() error {
			return dead.CreateRun(ctx, warrant.Run{FirmID: fresh.firm, RunID: fresh.id, MatterID: fresh.matter, UserID: fresh.user}, started)
		},
		"GetRun":       func() error { _, err := dead.GetRun(ctx, r.firm, r.id); return err },
		"AppendEvents": func() error { return dead.AppendEvents(ctx, r.firm, r.id, e.next(r, delta("x"))) },
		"AppendEvents batch": func() error {
			c := *r.chain
			a, _ := c.Append(delta("a"))
			b, _ := c.Append(delta("b"))
			return dead.AppendEvents(ctx, r.firm, r.id, a, b)
		},
		"FinishRun": func() error {
			return dead.FinishRun(ctx, r.firm, r.id, warrant.RunCompleted, e.next(r, &contracts.RunCompleted{StopReason: "end_turn"}))
		},
		"ReadLedger": func() error { _, _, err := dead.ReadLedger(ctx, r.firm, r.id, 0, 0); return err },
		"LastLine":   func() error { _, err := dead.LastLine(ctx, r.firm, r.id); return err },
		"UpdateProjection": func() error {
			return dead.UpdateProjection(ctx, r.firm, r.id, 0, warrant.Projection{LastSeq: 1, Status: "running"})
		},
		"CreateWarrantRequest": func() error { return dead.CreateWarrantRequest(ctx, w, warrantLines()...) },
		"DecideWarrant": func() error {
			_, err := dead.DecideWarrant(ctx, h.firm, h.id, h.approval, warrant.CounselDecision{Decision: warrant.DecisionApproved,
				PresentedHash: h.tool.hash, DecidedBy: "counsel-1"}, decided)
			return err
		},
		"GetWarrant": func() error { _, err := dead.GetWarrant(ctx, h.firm, h.id, h.approval); return err },
		"GetReleaseAuthorizedRequest": func() error {
			_, err := dead.GetReleaseAuthorizedRequest(ctx, h.approval, h.firm, h.id, h.matter)
			return err
		},
		"ResumeClaim":         func() error { return dead.ResumeClaim(ctx, claim, released) },
		"ListPendingWarrants": func() error { _, err := dead.ListPendingWarrants(ctx, h.firm, 10); return err },
		"ClaimToolEffectOnce": func() error {
			_, _, err := dead.ClaimToolEffectOnce(ctx, e.claimInput(r, tc, "owner"))
			return err
		},
		"ClaimToolEffectOnce with lines": func() error {
			_, _, err := dead.ClaimToolEffectOnce(ctx, e.claimInput(r, tc, "owner"), e.next(r, requested(tc, "allow")))
			return err
		},
		"CompleteEffect": func() error {
			return dead.CompleteEffect(ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}, "owner",
				warrant.Completion{State: warrant.ClaimCompleted, Result: json.RawMessage(`{}`)})
		},
		"CompleteEffect with lines": func() error {
			return dead.CompleteEffect(ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}, "owner",
				warrant.Completion{State: warrant.ClaimCompleted, Result: json.RawMessage(`{}`)}, e.next(r, completed(tc, id())))
		},
		"GetEffect": func() error {
			_, err := dead.GetEffect(ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash})
			return err
		},
		"FlagForReconciliation": func() error {
			return dead.FlagForReconciliation(ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash})
		},
		"RecordOutbound": func() error {
			_, err := dead.RecordOutbound(ctx, warrant.Outbound{FirmID: r.firm, RunID: r.id, EffectRef: id(), Kind: "email"})
			return err
		},
		"ListOutbound": func() error { _, err := dead.ListOutbound(ctx, r.firm, r.id); return err },
		"CreateTable":  func() error { return dynamo.CreateTable(ctx, client, "warrant-unreachable") },
	}
	for name, call := range ops {
		t.Run(name, func(t *testing.T) {
			err := call()
			k, retryable, _ := failure.Classify(err)
			if k != failure.KindStoreUnavailable || !retryable {
				t.Errorf("err = %v: kind %s, retryable %v; want store_unavailable, retryable", err, k, retryable)
			}
		})
	}
}

// testFailureKinds checks that a lost condition reaches the caller with the
// kind of the domain sentinel that names it (package warrant: a run that
// exists or a seq another writer holds is a conflict the client sees as 409;
// a projection overtaken by another reducer is store_conflict), on every
// endpoint, whatever SDK error it wraps.
func testFailureKinds(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())

	again := contracts.NewChain(r.id, r.firm)
	first, err := again.Append(&contracts.RunStarted{AgentKey: "other", Mode: contracts.ModeInvoke, ModelID: "m",
		PromptVersion: "p", SchemaVersion: "1", CostCapUSD: "2.00", MaxTokens: 1, MatterID: r.matter, UserID: r.user,
		History: []contracts.HistoryMessage{}})
	must(t, err)
	err = e.store.CreateRun(e.ctx, warrant.Run{FirmID: r.firm, RunID: r.id}, first)
	if !errors.Is(err, warrant.ErrRunExists) || kind(err) != failure.KindConflict {
		t.Errorf("duplicate CreateRun: %v, kind %s", err, kind(err))
	}

	atOne := *r.chain
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, e.line(r, delta("mine"))))
	theirs, err := atOne.Append(delta("theirs"))
	must(t, err)
	err = e.store.AppendEvents(e.ctx, r.firm, r.id, theirs)
	if !errors.Is(err, warrant.ErrSeqTaken) || kind(err) != failure.KindConflict {
		t.Errorf("single put on a taken seq: %v, kind %s", err, kind(err))
	}
	more, err := atOne.Append(delta("more"))
	must(t, err)
	err = e.store.AppendEvents(e.ctx, r.firm, r.id, theirs, more)
	if !errors.Is(err, warrant.ErrSeqTaken) || kind(err) != failure.KindConflict {
		t.Errorf("batch on a taken seq: %v, kind %s", err, kind(err))
	}

	err = e.store.UpdateProjection(e.ctx, r.firm, r.id, 5, warrant.Projection{LastSeq: 6})
	if !errors.Is(err, warrant.ErrProjectionConflict) || kind(err) != failure.KindStoreConflict {
		t.Errorf("stale projection: %v, kind %s", err, kind(err))
	}
}
