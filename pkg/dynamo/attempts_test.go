package dynamo_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
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
// without one is not found; bad domains are refused. Every write names the
// version it replaces and records the version it makes (who, when, before,
// after); of two writers of the same version exactly one wins, and a write
// that names another version, or creates a matter that exists, writes
// nothing.
func testMatters(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, other, matter := id(), id(), id()
	alice, bob := id(), id()
	_, err := e.store.GetMatter(e.ctx, firm, matter)
	wantErr(t, err, warrant.ErrNotFound, "a matter with no record")
	m := warrant.Matter{FirmID: firm, MatterID: matter, Title: "Ridgeway v. Harbor", ClientDomains: []string{"ridgeway.example"}, UpdatedBy: alice}
	saved, err := e.store.PutMatter(e.ctx, m, 0)
	if err != nil || saved.Version != 1 {
		t.Fatalf("create: %+v, %v", saved, err)
	}
	got, err := e.store.GetMatter(e.ctx, firm, matter)
	if err != nil || got.Title != m.Title || !reflect.DeepEqual(got.ClientDomains, m.ClientDomains) || got.UpdatedAt.IsZero() ||
		got.Version != 1 || got.UpdatedBy != alice {
		t.Fatalf("matter %+v, %v", got, err)
	}
	_, err = e.store.GetMatter(e.ctx, other, matter)
	wantErr(t, err, warrant.ErrNotFound, "another firm's matter")
	_, err = e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: matter, ClientDomains: []string{"UPPER.example"}, UpdatedBy: alice}, 1)
	wantInvalid(t, err, "a bad client domain")
	if _, err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: "not-a-uuid", UpdatedBy: alice}, 0); err == nil {
		t.Error("saved a matter whose id is not a UUID")
	}
	if _, err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: id()}, 0); err == nil {
		t.Error("saved a matter with no writer")
	}

	// Two writers of version 1: one makes version 2, the other is refused.
	next := m
	next.ClientDomains, next.UpdatedBy = []string{"ridgeway-holdings.example"}, bob
	var wins, refused int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := e.store.PutMatter(e.ctx, next, 1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, warrant.ErrMatterVersion):
				refused++
			default:
				t.Errorf("racing writer: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || refused != 1 {
		t.Fatalf("two writers of version 1: %d won, %d refused", wins, refused)
	}
	for _, c := range []struct {
		name      string
		ifVersion int64
		want      error
		matter    string
	}{
		{"a stale version", 1, warrant.ErrMatterVersion, matter},
		{"a version not yet made", 3, warrant.ErrMatterVersion, matter},
		{"create over a matter", 0, warrant.ErrMatterExists, matter},
		{"update of no record", 1, warrant.ErrMatterVersion, id()},
	} {
		w := next
		w.MatterID, w.ClientDomains = c.matter, []string{"elsewhere.example"}
		_, err := e.store.PutMatter(e.ctx, w, c.ifVersion)
		wantErr(t, err, c.want, c.name)
	}
	vs, more, err := e.store.MatterVersions(e.ctx, firm, matter, 0, 10)
	if err != nil || more || len(vs) != 2 {
		t.Fatalf("versions %+v, more %v, %v", vs, more, err)
	}
	if vs[0].Version != 1 || vs[0].Before != nil || vs[0].UpdatedBy != alice || vs[0].After.ClientDomains[0] != "ridgeway.example" ||
		vs[1].Version != 2 || vs[1].Before == nil || vs[1].Before.ClientDomains[0] != "ridgeway.example" ||
		vs[1].After.ClientDomains[0] != "ridgeway-holdings.example" || vs[1].UpdatedBy != bob || vs[1].UpdatedAt.IsZero() {
		t.Fatalf("versions %+v", vs)
	}
	if page, more, err := e.store.MatterVersions(e.ctx, firm, matter, 0, 1); err != nil || !more || len(page) != 1 || page[0].Version != 1 {
		t.Fatalf("first page %+v, more %v, %v", page, more, err)
	}
	if page, more, err := e.store.MatterVersions(e.ctx, firm, matter, 1, 1); err != nil || more || len(page) != 1 || page[0].Version != 2 {
		t.Fatalf("second page %+v, more %v, %v", page, more, err)
	}
	if vs, _, err := e.store.MatterVersions(e.ctx, other, matter, 0, 10); err != nil || len(vs) != 0 {
		t.Fatalf("another firm's versions %+v, %v", vs, err)
	}
	// The versions are not matters.
	if ms, err := e.store.ListMatters(e.ctx, firm); err != nil || len(ms) != 1 || ms[0].Version != 2 {
		t.Fatalf("matters %+v, %v", ms, err)
	}

	// A record written before matters kept versions is version 1, with no
	// history of it; its next write is version 2, with what it said.
	legacy := id()
	if _, err := e.ep.Client.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "FIRM#" + firm}, "SK": &types.AttributeValueMemberS{Value: "MATTER#" + legacy},
		"firm_id": &types.AttributeValueMemberS{Value: firm}, "matter_id": &types.AttributeValueMemberS{Value: legacy},
		"title": &types.AttributeValueMemberS{Value: "Old"}, "updated_at": &types.AttributeValueMemberS{Value: "2026-01-02T03:04:05.000000000Z"},
	}}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.store.GetMatter(e.ctx, firm, legacy); err != nil || got.Version != 1 {
		t.Fatalf("legacy matter %+v, %v", got, err)
	}
	if _, err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: legacy, Title: "New", UpdatedBy: alice}, 1); err != nil {
		t.Fatal(err)
	}
	if vs, _, err := e.store.MatterVersions(e.ctx, firm, legacy, 0, 10); err != nil || len(vs) != 1 || vs[0].Version != 2 ||
		vs[0].Before == nil || vs[0].Before.Title != "Old" || vs[0].After.Title != "New" {
		t.Fatalf("legacy versions %+v, %v", vs, err)
	}
}
