package dynamo_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// testEffectAttempts: a warranted effect whose attempt failed is retried as
// attempt 2, a claim of its own under a warrant of its own; a warrant only
// releases the attempt it was asked for, and LatestEffect reads the latest.
func testEffectAttempts(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h := e.newHeld(id())
	if c, err := e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, h.tool.hash); err != nil || c != nil {
		t.Fatalf("latest before any claim: %+v, %v", c, err)
	}
	_, err := e.decide(h, warrant.DecisionApproved)
	must(t, err)
	c1, l1 := e.resume(h, warrant.DecisionApproved)
	must(t, e.store.ResumeClaim(e.ctx, c1, l1))
	h.chain.Advance(l1)
	first := warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash}
	failed := completed(h.tool, c1.EffectRef)
	failed.Status = contracts.ToolError
	must(t, e.store.CompleteEffect(e.ctx, h.firm, h.id, first, e.take(c1),
		warrant.Completion{State: warrant.ClaimFailed, ToolStatus: contracts.ToolError, Result: failed.Result}, e.line(h.run, failed)))
	latest, err := e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, h.tool.hash)
	if err != nil || latest == nil || latest.State != warrant.ClaimFailed || latest.Attempt != 1 {
		t.Fatalf("latest after a failed attempt: %+v, %v", latest, err)
	}

	// The same call, held again for attempt 2 on a new warrant.
	retry := &held{run: h.run, approval: id(), tool: h.tool, expires: e.clock.Now().Add(time.Hour)}
	req := e.line(h.run, requested(h.tool, "require_approval"))
	blocked := e.line(h.run, &contracts.RunBlocked{Approval: contracts.BlockedApproval{
		ApprovalRequestID: retry.approval, ToolUseID: h.tool.useID, ToolName: h.tool.name, ToolInput: h.tool.input,
		ToolInputHash: h.tool.hash, Attempt: 2, RiskTier: "high", Reason: "r", HumanSummary: "s",
		ExpiresAt: contracts.FormatTime(retry.expires)}})
	w := e.warrant(retry)
	w.Attempt, w.ExpiresAt = 2, retry.expires
	must(t, e.store.CreateWarrantRequest(e.ctx, w, req, blocked))
	got, err := e.store.GetWarrant(e.ctx, h.firm, h.id, retry.approval)
	if err != nil || got.Attempt != 2 {
		t.Fatalf("retry warrant: %+v, %v", got, err)
	}
	_, err = e.decide(retry, warrant.DecisionApproved)
	must(t, err)

	// A release naming the first attempt is refused and writes nothing.
	wrong, lw := e.resume(retry, warrant.DecisionApproved)
	before := e.partition(h.firm, h.id)
	wantErr(t, e.store.ResumeClaim(e.ctx, wrong, lw), warrant.ErrHashMismatch, "resume of attempt 1 under the attempt 2 warrant")
	e.unchanged(before, h.firm, h.id, "resume of the wrong attempt")

	c2, l2 := e.resume(retry, warrant.DecisionApproved)
	c2.Attempt = 2
	must(t, e.store.ResumeClaim(e.ctx, c2, l2))
	latest, err = e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, h.tool.hash)
	if err != nil || latest == nil || latest.Attempt != 2 || latest.State != warrant.ClaimClaimed || latest.EffectRef != c2.EffectRef {
		t.Fatalf("latest after the retry's claim: %+v, %v", latest, err)
	}
	if old, err := e.store.GetEffect(e.ctx, h.firm, h.id, first); err != nil || old.State != warrant.ClaimFailed || old.EffectRef != c1.EffectRef {
		t.Fatalf("the failed attempt changed: %+v, %v", old, err)
	}
}

// testFirmSettings: a firm that saved nothing has the strict defaults; saved
// settings are read back, and one firm's settings are not another's.
func testFirmSettings(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	a, b := id(), id()
	got, err := e.store.GetFirmSettings(e.ctx, a)
	if err != nil || !reflect.DeepEqual(got, warrant.DefaultFirmSettings(a)) || !got.SeparationOfDuties || len(got.Domains) != 0 {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	must(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: a, SeparationOfDuties: false, Domains: []string{"firm.example", "firm-uk.example"}}))
	got, err = e.store.GetFirmSettings(e.ctx, a)
	if err != nil || got.SeparationOfDuties || got.FirmID != a || got.UpdatedAt.IsZero() ||
		!reflect.DeepEqual(got.Domains, []string{"firm.example", "firm-uk.example"}) {
		t.Fatalf("saved: %+v, %v", got, err)
	}
	if other, err := e.store.GetFirmSettings(e.ctx, b); err != nil || !other.SeparationOfDuties {
		t.Fatalf("another firm: %+v, %v", other, err)
	}
	if err := e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: "FIRM#x"}); err == nil {
		t.Fatal("saved settings under a firm id that is not a UUID")
	}
	// The monthly budget: absent means the deployment's default; set, it is
	// the firm's own (a decimal string in the item, monthly_budget_usd).
	if got.MonthlyBudgetNano != nil || got.MonthlyLimit(nil) != 0 {
		t.Errorf("no budget set: %+v", got)
	}
	dflt := int64(7_000_000_000)
	if got.MonthlyLimit(&dflt) != dflt {
		t.Errorf("the deployment default does not apply: %d", got.MonthlyLimit(&dflt))
	}
	budget := int64(250_500_000_000)
	must(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: a, SeparationOfDuties: true, MonthlyBudgetNano: &budget}))
	got, err = e.store.GetFirmSettings(e.ctx, a)
	if err != nil || got.MonthlyBudgetNano == nil || *got.MonthlyBudgetNano != budget || got.MonthlyLimit(&dflt) != budget {
		t.Fatalf("saved budget: %+v, %v", got, err)
	}
	m, err := e.ep.Client.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "FIRM#" + a}, "SK": &types.AttributeValueMemberS{Value: "SETTINGS"}}})
	must(t, err)
	if v, _ := m.Item["monthly_budget_usd"].(*types.AttributeValueMemberS); v == nil || v.Value != "250.50" {
		t.Errorf("stored monthly_budget_usd %v", m.Item["monthly_budget_usd"])
	}
	// A zero budget is a budget: nothing may be spent.
	zero := int64(0)
	must(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: a, MonthlyBudgetNano: &zero}))
	if got, err = e.store.GetFirmSettings(e.ctx, a); err != nil || got.MonthlyLimit(&dflt) != 0 {
		t.Errorf("zero budget: %+v, %v", got, err)
	}
	// One written by hand that does not parse is zero too, never unlimited.
	_, err = e.ep.Client.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.table),
		Key:                       map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "FIRM#" + a}, "SK": &types.AttributeValueMemberS{Value: "SETTINGS"}},
		UpdateExpression:          aws.String("SET monthly_budget_usd = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "$1,000"}}})
	must(t, err)
	if got, err = e.store.GetFirmSettings(e.ctx, a); err != nil || got.MonthlyBudgetNano == nil || got.MonthlyLimit(&dflt) != 0 {
		t.Errorf("unparsable budget: %+v, %v", got, err)
	}
	neg := int64(-1)
	if err := e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: a, MonthlyBudgetNano: &neg}); err == nil {
		t.Error("saved a negative budget")
	}
	for _, bad := range [][]string{{"Firm.Example"}, {"firm"}, {"firm.example", "firm.example"}, {"-x.example"}, {"a@b.example"}} {
		wantInvalid(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: b, Domains: bad}), fmt.Sprintf("domains %q", bad))
	}
	if other, err := e.store.GetFirmSettings(e.ctx, b); err != nil || len(other.Domains) != 0 {
		t.Fatalf("a refused save wrote %+v, %v", other, err)
	}
}

// testMatters: a matter's record is read back in its firm only; a matter
// without one is not found; bad domains are refused.
func testMatters(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, other, matter := id(), id(), id()
	_, err := e.store.GetMatter(e.ctx, firm, matter)
	wantErr(t, err, warrant.ErrNotFound, "a matter with no record")
	m := warrant.Matter{FirmID: firm, MatterID: matter, Title: "Ridgeway v. Harbor", ClientDomains: []string{"ridgeway.example"}}
	must(t, e.store.PutMatter(e.ctx, m))
	got, err := e.store.GetMatter(e.ctx, firm, matter)
	if err != nil || got.Title != m.Title || !reflect.DeepEqual(got.ClientDomains, m.ClientDomains) || got.UpdatedAt.IsZero() {
		t.Fatalf("matter %+v, %v", got, err)
	}
	_, err = e.store.GetMatter(e.ctx, other, matter)
	wantErr(t, err, warrant.ErrNotFound, "another firm's matter")
	wantInvalid(t, e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: matter, ClientDomains: []string{"UPPER.example"}}), "a bad client domain")
	if err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: "not-a-uuid"}); err == nil {
		t.Error("saved a matter whose id is not a UUID")
	}
}
