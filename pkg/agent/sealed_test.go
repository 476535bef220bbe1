package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// rawItems is every item of a run's partition as stored, each attribute
// value flattened to text: what a reader of the table (a backup, an export
// of the table, an operator's scan) sees.
func (h *harness) rawItems(runID string) map[string]string {
	h.t.Helper()
	out, err := h.ep.Client.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(h.table),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: dynamo.RunKey(h.firm, runID)}}})
	if err != nil {
		h.t.Fatal(err)
	}
	items := map[string]string{}
	for _, it := range out.Items {
		items[it["SK"].(*types.AttributeValueMemberS).Value] = dynamo.ItemText(it)
	}
	return items
}

// Issue 26, item 2: a run under a data key keeps its privileged content
// only sealed. Counsel's message, the e-mail as the model drafted it and as
// counsel edited it, counsel's note, the tool's answer and the model's
// words are in no item of the run's partition (ledger lines, the warrant,
// counsel's edit, the claim, the run), though counsel is shown, signs and
// runs the same bytes as before, and the ledger opens to them. The
// reference tools' outbox, the firm system's own record of what it
// received, is the exception this test names (it is not Warrant's copy).
func TestSealedRunStoresNoPlaintext(t *testing.T) {
	h := newHarness(t, demo, options{})
	const asked = "Please e-mail the client an update on the motion (privileged: strategy)."
	res := h.start(asked, "")
	p := res.State.PendingApproval
	if res.State.Status != warrant.RunHeld || p == nil {
		t.Fatalf("not held: %+v", res.State)
	}
	run, err := h.store.GetRun(context.Background(), h.firm, res.State.RunID)
	if err != nil || len(run.DataKey) == 0 {
		t.Fatalf("the run item holds no data key: %v", err)
	}
	const note = "Approved with the copy removed; privileged note."
	w, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit(), Note: note})
	if err != nil {
		t.Fatal(err)
	}
	// What the Decider answers is opened: counsel's own words and edit.
	if w.Note != note || !strings.Contains(string(w.EditedInput), "I will call you after the hearing.") || !strings.Contains(string(w.Input), bedrocktest.DemoCopyAddress) {
		t.Fatalf("decided warrant %q / %s / %s", w.Note, w.EditedInput, w.Input)
	}
	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	if done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoEmailedText {
		t.Fatalf("after resume: %+v", done.State)
	}

	privileged := []string{asked, note, "I will call you after the hearing.", bedrocktest.DemoCopyAddress, bedrocktest.DemoEmailedText, "Discovery update"}
	for sk, text := range h.rawItems(res.State.RunID) {
		if strings.HasPrefix(sk, "OUT#") {
			continue // the reference tools' own record of the e-mail they sent
		}
		for _, s := range privileged {
			if strings.Contains(text, s) {
				t.Errorf("item %s holds %q in the clear", sk, s)
			}
		}
	}
	// The ledger is sealed (schema 2) and opens to what was written.
	var sealed, started, completed bool
	var stored, openedLines []contracts.Line
	key := h.runKey(res.State.RunID)
	items, _, err := h.store.ReadLedger(context.Background(), h.firm, res.State.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			t.Fatal(err)
		}
		sealed = sealed || l.Sealed
		o, err := contracts.OpenLine(l, key)
		if err != nil {
			t.Fatal(err)
		}
		stored, openedLines = append(stored, l), append(openedLines, o)
		switch e := o.Event.(type) {
		case *contracts.RunStarted:
			started = e.CounselMessage == asked
		case *contracts.RunCompleted:
			completed = e.FinalText == bedrocktest.DemoEmailedText
		}
	}
	if !sealed || !started || !completed {
		t.Fatalf("ledger: sealed %v, run.started opens %v, run.completed opens %v", sealed, started, completed)
	}
	// Without the key the audit reports each decision as recorded and
	// sealed; opened, it decides every one again.
	policy, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	closed, err := reducer.Rederive(stored, policy)
	if err != nil || len(closed) < 3 {
		t.Fatalf("Rederive of the stored ledger: %d decisions, %v", len(closed), err)
	}
	again, err := reducer.Rederive(openedLines, policy)
	if err != nil || len(again) != len(closed) {
		t.Fatalf("Rederive of the opened ledger: %d decisions, %v", len(again), err)
	}
	for i := range closed {
		if !closed[i].Sealed || again[i].Sealed || closed[i].Seq != again[i].Seq || closed[i].RiskTier != again[i].RiskTier {
			t.Fatalf("decision %d: stored %+v, opened %+v", i, closed[i], again[i])
		}
	}
	// The warrant read back opens, its input held to the signed hash.
	w2, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if !seal.IsSealed(w2.Input) || !seal.IsSealed([]byte(w2.Note)) {
		t.Fatalf("the warrant item holds input %s, note %q", w2.Input, w2.Note)
	}
	opened, err := agent.OpenWarrant(key, w2)
	if err != nil || opened.Note != note || opened.HumanSummary != p.HumanSummary {
		t.Fatalf("opened warrant %+v: %v", opened, err)
	}
	other, _, err := h.dataKeys.NewRunKey(context.Background(), h.firm, newID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.OpenWarrant(other, w2); failureKind(err) != failure.KindLedgerCorrupt {
		t.Fatalf("the warrant under another run's key: %v", err)
	}
}

// failingKeys is a keyring whose KMS does not answer.
type failingKeys struct{ seal.Keyring }

var errKMSDown = failure.Classified(failure.KindStoreUnavailable, errors.New("injected: KMS unreachable"))

func (failingKeys) NewRunKey(context.Context, string, string) (*seal.RunKey, []byte, error) {
	return nil, nil, errKMSDown
}

// Issue 26: a KMS failure never turns into a plaintext write. With the
// data key unobtainable the run is not started at all: no run item, no
// ledger line, the error the keyring's (retryable).
func TestNoDataKeyNoRun(t *testing.T) {
	h := newHarness(t, demo, options{})
	policy, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: failingKeys{h.dataKeys}, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys},
		h.reference(), agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	runID := newID()
	_, err = brain.Start(context.Background(), h.invoke(runID, "Please file the motion."), agent.StartOptions{CostCapUSD: "1.00"})
	if !errors.Is(err, errKMSDown) {
		t.Fatalf("start without a data key: %v", err)
	}
	if _, err := h.store.GetRun(context.Background(), h.firm, runID); !errors.Is(err, warrant.ErrNotFound) {
		t.Fatalf("a run was written: %v", err)
	}
}

// Issue 26, item 8: a run sealed under the firm's KMS key, through the real
// SDK against moto's KMS (GenerateDataKey and Decrypt with the run's
// encryption context), wired as the functions wire DATA_KEY=kms:<key>: the
// run is held, decided and resumed, its run item keeps a KMS blob (not a
// local key's), and the ledger opens with the key and not without it.
func TestSealedRunOnKMS(t *testing.T) {
	ep := dynamotest.Moto(t) // skips without moto_server (fails with CI=true)
	client := kms.New(kms.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	key, err := client.CreateKey(t.Context(), &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecSymmetricDefault,
		KeyUsage: kmstypes.KeyUsageTypeEncryptDecrypt})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := wire.DataKeys("kms:"+*key.KeyMetadata.Arn, func() seal.KMSClient { return client })
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, demo, options{})
	h.dataKeys = ring
	h.brain = h.brainWith(h.model)
	res := h.start("Please file the motion.", "")
	if res.State.Status != warrant.RunHeld {
		t.Fatalf("not held: %+v", res.State)
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := h.resume(res)
	if err != nil || done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoFiledText {
		t.Fatalf("after resume: %+v %v", done.State, err)
	}
	run, err := h.store.GetRun(t.Context(), h.firm, res.State.RunID)
	if err != nil || len(run.DataKey) == 0 || strings.HasPrefix(string(run.DataKey), "wlk1") {
		t.Fatalf("the run's wrapped key: %q %v", run.DataKey, err)
	}
	// The ledger opens with the run's key (h.ledger opens it through KMS)
	// and holds the filing; under the local keyring it does not open.
	var filed bool
	for _, tc := range h.completions(res.State.RunID) {
		filed = filed || (tc.ToolName == "file_court_document" && tc.Status == contracts.ToolSuccess)
	}
	local, err := wire.DataKeys(harnessDataKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.OpenRunKey(t.Context(), h.firm, res.State.RunID, run.DataKey); !filed || err == nil {
		t.Fatalf("filed %v; the KMS blob under a local key: %v", filed, err)
	}
}
