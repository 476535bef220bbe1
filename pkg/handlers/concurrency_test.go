package handlers_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

// callAll sends every event at once and returns the responses in order.
func (s *stack) callAll(evs []*event) []events.APIGatewayV2HTTPResponse {
	s.t.Helper()
	payloads := make([][]byte, len(evs))
	for i, e := range evs {
		payloads[i] = e.bytes(s.t)
	}
	out := make([]events.APIGatewayV2HTTPResponse, len(evs))
	errs := make([]error, len(evs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, e := range evs {
		h := s.handlerFor(e.route())
		wg.Go(func() {
			<-start
			b, err := h.Invoke(context.Background(), payloads[i])
			if err == nil {
				err = jsonUnmarshal(b, &out[i])
			}
			if err == nil {
				answers.record(evs[i].route(), out[i])
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			s.t.Fatalf("request %d: %v", i, err)
		}
	}
	return out
}

// TestConcurrentResumes: of 64 concurrent resumes of one warrant exactly one
// is accepted (202) and the other 63 get precise 409 problems, never a 5xx;
// the accepted one's worker message, delivered three times at once (SQS
// redelivers, and more than one worker may hold a copy), runs the effect
// exactly once and completes the run.
func TestConcurrentResumes(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	const n = 64
	evs := make([]*event, n)
	for i := range evs {
		evs[i] = resumeReq(t, h)
	}
	won := 0
	for _, resp := range s.callAll(evs) {
		switch resp.StatusCode {
		case 202:
			won++
			if v := decode[handlers.RunView](t, resp); v.Status != "running" {
				t.Errorf("winner: %+v", v)
			}
		default:
			if p := s.wantProblem("concurrent resume", resp, 409); p.Kind != "conflict" {
				t.Errorf("concurrent resume: kind %q, want conflict", p.Kind)
			}
		}
	}
	if won != 1 {
		t.Fatalf("%d resumes won, want 1", won)
	}
	msgs := s.queue.take()
	if len(msgs) != 1 || msgs[0].Reason != contracts.ReasonResumed || msgs[0].ApprovalRequestID != h.approvalID {
		t.Fatalf("worker messages %+v, want the one resume", msgs)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if f := s.work(msgs[0], i+1); len(f) > 0 {
				t.Errorf("delivery %d reported %v", i+1, f)
			}
		})
	}
	wg.Wait()
	s.drain()
	if v := s.view(h.runID); v.Status != "completed" {
		t.Fatalf("after the worker: %+v, want completed", v)
	}
	out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
	if err != nil || len(out) != 1 {
		t.Fatalf("effects %+v %v, want 1", out, err)
	}
}

// TestConcurrentDecisions: approve and deny racing on one warrant: exactly
// one decision lands in the ledger. Two identical approvals in the same
// millisecond are one decision (byte-identical approval.decided lines) and
// may both answer 200; every 200 must then report that same decision.
func TestConcurrentDecisions(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	var evs []*event
	for i := range 6 {
		d := "approve"
		if i%2 == 1 {
			d = "deny"
		}
		evs = append(evs, approveReq(t, h, d, h.hash))
	}
	statuses := map[string]int{}
	for _, resp := range s.callAll(evs) {
		if resp.StatusCode == 200 {
			statuses[decode[handlers.WarrantView](t, resp).Status]++
			continue
		}
		s.wantProblem("concurrent decision", resp, 409)
	}
	w, err := s.store.GetWarrant(context.Background(), fixFirm, h.runID, h.approvalID)
	if err != nil || (w.Status != "approved" && w.Status != "denied") {
		t.Fatalf("warrant %+v %v", w, err)
	}
	if len(statuses) != 1 || statuses[string(w.Status)] == 0 {
		t.Fatalf("answers %v disagree with the stored decision %s", statuses, w.Status)
	}
	items, _, err := s.store.ReadLedger(context.Background(), fixFirm, h.runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if l.Type == contracts.TypeApprovalDecided {
			decided++
		}
	}
	if decided != 1 {
		t.Fatalf("%d approval.decided lines, want 1", decided)
	}
}

// TestCorrelationID: a canonical X-Correlation-Id is echoed on success and
// in problems; anything else is replaced by a fresh id; a body
// correlation_id on invoke wins.
func TestCorrelationID(t *testing.T) {
	s := newStack(t, stackOptions{})
	cid := uuid.NewString()
	resp := s.call(fixture(t, "list-approvals.json").set("headers.x-correlation-id", cid))
	if resp.Headers[httpapi.CorrelationHeader] != cid {
		t.Errorf("success: X-Correlation-Id %q, want %q", resp.Headers[httpapi.CorrelationHeader], cid)
	}
	resp = s.call(fixture(t, "list-approvals.json").set("headers.x-correlation-id", cid).query(map[string]string{"bogus": "1"}))
	if p := s.wantProblem("echoed", resp, 400); p.CorrelationID != cid {
		t.Errorf("problem correlation_id %q, want %q", p.CorrelationID, cid)
	}
	resp = s.call(fixture(t, "list-approvals.json").set("headers.x-correlation-id", secret+"\r\nX-Evil: 1"))
	if got := resp.Headers[httpapi.CorrelationHeader]; uuid.Validate(got) != nil {
		t.Errorf("a non-UUID correlation id was not replaced: %q", got)
	}
	bodyCID := uuid.NewString()
	resp = s.post(fixture(t, "invoke.json").set("headers.x-correlation-id", cid).editBody(func(m map[string]any) { m["correlation_id"] = bodyCID }))
	if resp.StatusCode != 202 || resp.Headers[httpapi.CorrelationHeader] != bodyCID {
		t.Errorf("invoke with body correlation_id: %d %q", resp.StatusCode, resp.Headers[httpapi.CorrelationHeader])
	}
}

// TestEventsPastTheEnd: a page after the last line of a real run is an empty
// 200, not a 404.
func TestEventsPastTheEnd(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	resp := s.call(fixture(t, "get-run-events.json").runPath(h.runID, "").query(map[string]string{"after_seq": "1000"}))
	if resp.StatusCode != 200 || resp.Body != "" || resp.Headers["X-Next-After-Seq"] != "" {
		t.Fatalf("past the end: %d %v %q", resp.StatusCode, resp.Headers, resp.Body)
	}
	resp = s.call(fixture(t, "get-run-events.json").runPath(h.runID, "").query(map[string]string{"after_seq": "1099511627776"}))
	if resp.StatusCode != 200 || resp.Body != "" {
		t.Fatalf("after_seq at its maximum: %d %q", resp.StatusCode, resp.Body)
	}
}

// TestConcurrentStreamDeliveries: overlapping batches for the same run
// (a retried batch racing the next one) all succeed and leave the
// projection at the fold of the whole ledger.
func TestConcurrentStreamDeliveries(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completeRun(t)
	recs := s.records(fixFirm, h.runID, 0)
	var wg sync.WaitGroup
	results := make([]events.DynamoDBEventResponse, 6)
	payloads := make([][]byte, len(results))
	for i := range payloads {
		b, err := jsonMarshal(events.DynamoDBEvent{Records: shuffled(recs[i%3:], uint64(i))})
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = b
	}
	for i := range results {
		wg.Go(func() {
			out, err := lambdaHandler(s.reduce.Handle).Invoke(context.Background(), payloads[i])
			if err == nil {
				err = jsonUnmarshal(out, &results[i])
			}
			if err != nil {
				t.Errorf("delivery %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		if len(r.BatchItemFailures) != 0 {
			t.Errorf("delivery %d: failures %v", i, r.BatchItemFailures)
		}
	}
	want, seq := s.fold(fixFirm, h.runID)
	if p := s.projection(fixFirm, h.runID); string(p.State) != want || p.LastSeq != seq {
		t.Fatalf("projection at seq %d, want %d", p.LastSeq, seq)
	}
}

// TestRunFailsOnCostCap: a run the cost cap stops is a 200 with a failed run
// view and a failure a client may see.
func TestRunFailsOnCostCap(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.call(fixture(t, "invoke.json").editBody(func(m map[string]any) { m["cost_cap_usd"] = "0.000001" }))
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	v := decode[handlers.RunView](t, resp)
	if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "cost_cap_exceeded" || v.Failure.UserVisibleMessage == "" ||
		v.CostCapUSD != "0.000001" || v.PendingApproval != nil {
		t.Fatalf("run view %+v (failure %+v)", v, v.Failure)
	}
	resp = s.call(fixture(t, "get-run.json").runPath(v.RunID, "").query(map[string]string{"consistent": "true"}))
	if g := decode[handlers.RunView](t, resp); g.Status != "failed" || g.Failure == nil || g.Failure.Kind != "cost_cap_exceeded" {
		t.Fatalf("get run: %s", resp.Body)
	}
	out, _ := s.store.ListOutbound(context.Background(), fixFirm, v.RunID)
	if len(out) != 0 {
		t.Fatalf("effects of a capped run: %+v", out)
	}
}
