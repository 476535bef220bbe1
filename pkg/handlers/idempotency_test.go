package handlers_test

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// A retried POST /v1/runs with the same Idempotency-Key answers with the same
// run; the key never starts a second run or a second warrant.
func TestInvokeIdempotencyKey(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "2f9d7c1e-8a4b-4c3d-9e2f-1a0b9c8d7e6f"
	first := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key))
	if first.StatusCode != 200 {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	a := decode[handlers.RunView](t, first)
	before := s.scan()
	retry := s.post(fixture(t, "invoke.json").set("headers.idempotency-key", key))
	b := decode[handlers.RunView](t, retry)
	if retry.StatusCode != 202 || b.RunID != a.RunID || b.PendingApproval == nil ||
		b.PendingApproval.ApprovalRequestID != a.PendingApproval.ApprovalRequestID {
		t.Fatalf("retry: %d %+v vs %+v", retry.StatusCode, b, a)
	}
	s.wantUnchanged("retry", before)
	if s.fake.Calls() != 2 {
		t.Fatalf("the retry called the model: %d calls", s.fake.Calls())
	}

	other := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key).editBody(func(m map[string]any) {
		m["counsel_message"] = "Something else entirely."
	}))
	s.wantProblem("reused key", other, 409)
	s.wantUnchanged("reused key", before)

	bad := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", "not-a-uuid"))
	s.wantProblem("bad key", bad, 400)
	s.wantUnchanged("bad key", before)

	// Another user's same key is another run.
	mine := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key).claim("sub", "5e5e5e5e-1111-4222-8333-444455556666"))
	if mine.StatusCode != 200 || decode[handlers.RunView](t, mine).RunID == a.RunID {
		t.Fatalf("another user's key: %d %s", mine.StatusCode, mine.Body)
	}
}

// TestInvokeReplayOfACorruptRun: a replay whose run's first line does not
// parse is the ledger's fault (500 ledger_corrupt), not a key reused for a
// different request (409): the client did nothing wrong, and nothing is
// written.
func TestInvokeReplayOfACorruptRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "6b5a4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
	req := func() *event { return fixture(t, "invoke.json").set("headers.idempotency-key", key) }
	first := s.call(req())
	runID := decode[handlers.RunView](t, first).RunID
	_, err := s.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: dynamo.RunKey(fixFirm, runID)},
			"SK": &types.AttributeValueMemberS{Value: "EVT#000000000001"}},
		UpdateExpression:          aws.String("SET #line = :garbage"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#line": "line"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":garbage": &types.AttributeValueMemberS{Value: `{"not":"a line"`}},
	})
	if err != nil {
		t.Fatalf("corrupting line 1: %v", err)
	}
	before := s.scan()
	if p := s.wantProblem("replay of a corrupt run", s.post(req()), 500); p.Kind != "ledger_corrupt" {
		t.Errorf("kind %q, want ledger_corrupt", p.Kind)
	}
	s.wantUnchanged("replay of a corrupt run", before)
}

// TestInvokeKeyReusedForAnotherRequest: a retry answers the run only when it
// asks for what the run's run.started line records. Each field a client
// chooses (the body's, and the roles its token presents, which the policy
// weighs for every call of the run) is compared: changed, added or dropped,
// it is 409 and nothing is written. The correlation id is the attempt's
// tracing id, not part of what is asked, and roles are a set: neither makes a
// retry another request.
func TestInvokeKeyReusedForAnotherRequest(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	body := map[string]any{
		"agent_key":       "matter_assistant",
		"matter_id":       "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99",
		"counsel_message": "Please file the motion to compel discovery.",
		"history":         []any{map[string]any{"role": "user", "text": "Earlier: the deadline is Friday."}},
		"chat_session_id": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
		"form_id":         "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e",
		"correlation_id":  "3c4d5e6f-7a8b-4c9d-8e1f-2a3b4c5d6e7f",
		"cost_cap_usd":    "0.50",
	}
	req := func(edit func(m map[string]any)) *event {
		ev := fixture(t, "invoke.json").set("headers.idempotency-key", key).roles("associate", "partner").
			bodyJSON(maps.Clone(body))
		if edit != nil {
			ev.editBody(edit)
		}
		return ev
	}
	first := s.post(req(nil))
	if first.StatusCode != 202 {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	runID := decode[handlers.RunView](t, first).RunID
	before := s.scan()

	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	drop := func(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }
	for _, c := range []struct {
		name string
		ev   *event
	}{
		{"chat_session_id changed", req(set("chat_session_id", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"))},
		{"chat_session_id dropped", req(drop("chat_session_id"))},
		{"form_id changed", req(set("form_id", "8e7d6c5b-4a39-4281-9f6e-5d4c3b2a1f0e"))},
		{"form_id dropped", req(drop("form_id"))},
		{"matter_id changed", req(set("matter_id", "7d6c5b4a-3928-4170-8e5d-4c3b2a1f0e9d"))},
		{"counsel_message changed", req(set("counsel_message", "Please file it tomorrow."))},
		{"history changed", req(set("history", []any{map[string]any{"role": "user", "text": "Earlier: the deadline is Monday."}}))},
		{"history dropped", req(drop("history"))},
		{"cost_cap_usd changed", req(set("cost_cap_usd", "0.51"))},
		{"cost_cap_usd dropped (the default)", req(drop("cost_cap_usd"))},
		{"a role more", req(nil).roles("associate", "partner", "counsel")},
		{"a role less", req(nil).roles("associate")},
		{"no roles", req(nil).roles([]string{}...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p := s.wantProblem(c.name, s.post(c.ev), 409); p.Kind != "conflict" {
				t.Errorf("kind %q, want conflict", p.Kind)
			}
			s.wantUnchanged(c.name, before)
		})
	}

	for _, c := range []struct {
		name string
		ev   *event
	}{
		{"the same request", req(nil)},
		{"another correlation_id", req(set("correlation_id", "4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a"))},
		{"no correlation_id, another x-correlation-id", req(drop("correlation_id")).set("headers.x-correlation-id", "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b")},
		{"the roles in another order", req(nil).roles("partner", "associate")},
		{"a cost cap spelled otherwise", req(set("cost_cap_usd", "0.5"))},
		{"another display name", req(nil).claim("name", "Someone Renamed")},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := s.post(c.ev)
			if resp.StatusCode != 202 || decode[handlers.RunView](t, resp).RunID != runID {
				t.Fatalf("%d %s, want 202 with run %s", resp.StatusCode, resp.Body, runID)
			}
			s.wantUnchanged(c.name, before)
		})
	}
}

// TestRunStartedFieldsAreDecided: every member run.started records is either
// compared by a replay (TestInvokeKeyReusedForAnotherRequest has a case for
// each) or listed here as not the client's choice. A member added to
// run.started fails this test until someone decides which it is.
func TestRunStartedFieldsAreDecided(t *testing.T) {
	compared := []string{"agent_key", "matter_id", "user_id", "user_roles", "chat_session_id", "form_id",
		"history", "counsel_message", "cost_cap_usd"}
	notCompared := []string{"correlation_id", // the attempt's tracing id
		"mode", "model_id", "prompt_version", "schema_version", "max_tokens", "agents_version", "catalog_version", "policy_sha256", // the server's choices
		"user_name"} // display only: a token renamed between attempts is the same request
	typ := reflect.TypeFor[contracts.RunStarted]()
	var got []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		got = append(got, name)
	}
	want := append(slices.Clone(compared), notCompared...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("run.started records %q; the replay decided %q", got, want)
	}
}
