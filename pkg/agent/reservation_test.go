package agent_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"

	"github.com/seed-f6d3920e/warrant"
)

// The reservation of each model call is the worst case of the request the
// model received (docs/DECISIONS.md, "Hard caps by reservation"). These
// tests recompute it from the fake's recorded bytes, not from the ledger's
// own reserved_usd, and bill with a model that costs exactly that worst
// case, so a reservation that is too small, or computed on another request
// than the one sent, fails them.

const fileIt = "Please file the motion to compel."

// worstOf is the worst case of one recorded request: the input bound of the
// bytes received, every allowed output token, at the model's price.
func worstOf(t *testing.T, prices *pricing.Table, r bedrocktest.Request) pricing.Nano {
	t.Helper()
	in, err := r.ConverseInput()
	if err != nil {
		t.Fatalf("the request the model received: %v", err)
	}
	bound, err := agent.InputBound(in)
	if err != nil {
		t.Fatalf("bound: %v", err)
	}
	if r.MaxTokens <= 0 {
		t.Fatalf("a request without maxTokens: its output is not bounded")
	}
	w, err := prices.WorstCost(r.ModelID, bound, int64(r.MaxTokens))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// worstCaseModel is the demo conversation billed at each request's worst
// case: its input bound in prompt tokens of the model's dearest input-side
// kind, and every allowed output token.
func worstCaseModel(t *testing.T) func(*harness) bedrocktest.Script {
	prices, err := pricing.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	p, err := prices.Price(testModel)
	if err != nil {
		t.Fatal(err)
	}
	bill := func(r bedrocktest.Request) bedrocktest.Usage {
		in, err := r.ConverseInput()
		if err != nil {
			t.Errorf("worst-case model: %v", err)
			return bedrocktest.Usage{}
		}
		bound, err := agent.InputBound(in)
		if err != nil {
			t.Errorf("worst-case model: %v", err)
			return bedrocktest.Usage{}
		}
		u := bedrocktest.Usage{InputTokens: int32(bound), OutputTokens: r.MaxTokens}
		switch {
		case p.CacheWriteSupported && p.CacheWrite > p.Input && (!p.CacheReadSupported || p.CacheWrite >= p.CacheRead):
			u.InputTokens, u.CacheWriteInputTokens = 0, int32(bound)
		case p.CacheReadSupported && p.CacheRead > p.Input:
			u.InputTokens, u.CacheReadInputTokens = 0, int32(bound)
		}
		return u
	}
	return func(*harness) bedrocktest.Script { return bedrocktest.DemoScript().BilledBy(bill) }
}

// governed drives the demo's governed run: a search, a filing held on a
// warrant, counsel's approval and the resume that files and answers.
func (h *harness) governed(capUSD string) agent.Result {
	h.t.Helper()
	res := h.start(fileIt, capUSD)
	if res.State.Status != warrant.RunHeld {
		return res
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := h.resume(res)
	if err != nil {
		h.t.Fatalf("resume: %v", err)
	}
	return done
}

// TestReservationIsTheWorstCaseOfTheRequestSent: for every model call of a
// governed run (tools, a hold, a resume), on both routes, model.usage's
// reserved_usd is the worst case recomputed from the request the model
// received, and the worst-case model's bill equals it.
func TestReservationIsTheWorstCaseOfTheRequestSent(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "converse", true: "stream"}[stream], func(t *testing.T) {
			h := newHarness(t, worstCaseModel(t), options{stream: stream})
			done := h.governed("10.00")
			if done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoFiledText {
				t.Fatalf("the governed run: %+v", done.State)
			}
			reqs, us := h.fake.Requests(), h.usages(done.State.RunID)
			if len(reqs) != 3 || len(us) != 3 {
				t.Fatalf("%d requests, %d usage lines; want 3 of each (search, filing, answer)", len(reqs), len(us))
			}
			if !lastRequestHasToolResult(reqs[2], "success", "") {
				t.Fatalf("the last call does not carry the filing's result")
			}
			for i, r := range reqs {
				w := worstOf(t, h.cfg.Prices, r)
				if got := usd(t, us[i].ReservedUSD); got != w {
					t.Errorf("call %d reserved %s; the request it sent has a worst case of %s", i+1, got, w)
				}
				if got := usd(t, us[i].CostUSD); got != w {
					t.Errorf("call %d cost %s; the worst-case model bills %s", i+1, got, w)
				}
			}
		})
	}
}

// TestCapOfExactlyTheWorstCases: with a model that bills every call its
// worst case, a run whose cap is the sum of its calls' worst cases (from
// the requests received) completes; one nano-dollar less and its last call
// is refused before it is made, after the filing ran.
func TestCapOfExactlyTheWorstCases(t *testing.T) {
	h := newHarness(t, worstCaseModel(t), options{})
	first := h.governed("10.00")
	if first.State.Status != warrant.RunCompleted {
		t.Fatalf("the reference run: %+v", first.State)
	}
	var sum pricing.Nano
	for _, r := range h.fake.Requests() {
		sum += worstOf(t, h.cfg.Prices, r)
	}

	exact := h.governed(pricing.FormatUSD(sum))
	if exact.State.Status != warrant.RunCompleted || exact.State.Cost != sum || exact.State.ModelCalls != 3 {
		t.Fatalf("cap = the worst cases' sum %s: %+v", sum, exact.State)
	}

	calls := h.fake.Calls()
	below := h.governed(pricing.FormatUSD(sum - 1))
	if below.State.Status != warrant.RunFailed || below.State.FailureKind != string(failure.KindCostCapExceeded) ||
		below.State.ModelCalls != 2 || h.fake.Calls() != calls+2 {
		t.Fatalf("one nano below %s: %+v, %d calls", sum, below.State, h.fake.Calls()-calls)
	}
	if n := len(h.outbound(below.State.RunID)); n != 1 {
		t.Fatalf("%d filings; the refusal came after the filing ran", n)
	}
}
