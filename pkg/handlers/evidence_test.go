package handlers_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

// getRoute is events/get-run.json sent to another GET route of the runs
// function, with path parameters and a query.
func getRoute(t *testing.T, route, path string, params, query map[string]string) *event {
	e := fixture(t, "get-run.json")
	e.m["routeKey"] = route
	e.obj("requestContext")["routeKey"] = route
	e.m["rawPath"] = path
	e.obj("requestContext.http")["path"] = path
	e.m["pathParameters"] = map[string]any{}
	for k, v := range params {
		e.pathParam(k, v)
	}
	if len(params) == 0 {
		delete(e.m, "pathParameters")
	}
	if query != nil {
		e.query(query)
	}
	return e
}

func (s *stack) bundle(run string, query map[string]string) evidence.Bundle {
	s.t.Helper()
	resp := s.post(getRoute(s.t, "GET /v1/runs/{run_id}/evidence", "/v1/runs/"+run+"/evidence", map[string]string{"run_id": run}, query))
	if resp.StatusCode != 200 {
		s.t.Fatalf("evidence of %s: %d %s", run, resp.StatusCode, resp.Body)
	}
	var b evidence.Bundle
	if err := contracts.DecodeStrict([]byte(resp.Body), &b); err != nil {
		s.t.Fatalf("evidence bundle does not decode strictly: %v", err)
	}
	return b
}

func (s *stack) firmLog() evidence.LogBundle {
	s.t.Helper()
	resp := s.post(getRoute(s.t, "GET /v1/evidence/log", "/v1/evidence/log", nil, nil))
	if resp.StatusCode != 200 {
		s.t.Fatalf("firm log: %d %s", resp.StatusCode, resp.Body)
	}
	var l evidence.LogBundle
	if err := contracts.DecodeStrict([]byte(resp.Body), &l); err != nil {
		s.t.Fatalf("firm log does not decode strictly: %v", err)
	}
	return l
}

// trusted is the key set a verifier outside the firm holds: the public keys
// GET /v1/keys publishes, read from their PEM.
func (s *stack) trusted() evidence.KeySet {
	s.t.Helper()
	resp := s.post(getRoute(s.t, "GET /v1/keys", "/v1/keys", nil, nil))
	if resp.StatusCode != 200 {
		s.t.Fatalf("keys: %d %s", resp.StatusCode, resp.Body)
	}
	v := decode[struct {
		Keys []handlers.KeyView `json:"keys"`
	}](s.t, resp)
	var pems string
	for _, k := range v.Keys {
		pems += k.PublicKeyPEM
	}
	keys, err := evidence.ParsePEM([]byte(pems))
	if err != nil || len(v.Keys) != 1 || !v.Keys[0].Signing {
		s.t.Fatalf("keys: %v %+v", err, v.Keys)
	}
	return keys
}

// settle delivers the run's ledger to stream-reduce (which issues its
// receipts) and runs a sweep (which signs the firm log's checkpoint).
func (s *stack) settle(run string) handlers.SweepReport {
	s.t.Helper()
	if resp := s.deliver(s.records(fixFirm, run, 0)); len(resp.BatchItemFailures) > 0 {
		s.t.Fatalf("stream-reduce failed: %+v\n%s", resp, s.logs.String())
	}
	return s.sweep()
}

// completedFiling runs the demo to its end: held on the filing's warrant,
// approved by counsel, resumed, the filing executed once.
func (s *stack) completedFiling(t *testing.T) held {
	h := s.startHeld(t)
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[handlers.RunView](t, s.call(resumeReq(t, h))); v.Status != "completed" {
		t.Fatalf("resume: %+v", v)
	}
	return h
}

func TestEvidenceOfACompletedRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	// Before the firm's first checkpoint the desk's view awaits one: not
	// verified, and no problem (nothing failed).
	early := s.post(getRoute(t, "GET /v1/runs/{run_id}/receipts", "/v1/runs/"+h.runID+"/receipts", map[string]string{"run_id": h.runID}, nil))
	if v := decode[handlers.ReceiptsView](t, early); early.StatusCode != 200 || v.Verified || v.Checkpoint != 0 || v.Problem != "" {
		t.Fatalf("receipts before any checkpoint: %d %s", early.StatusCode, early.Body)
	}
	if rep := s.settle(h.runID); rep.Checkpoints != 1 || rep.CheckpointErrors != 0 {
		t.Fatalf("sweep: %+v, want one checkpoint", rep)
	}
	keys := s.trusted()
	b := s.bundle(h.runID, nil)
	rep, err := evidence.Verify(b, keys)
	if err != nil {
		t.Fatalf("the untampered bundle does not verify: %v", err)
	}
	// The run's start, the demo's search (policy-allowed, claimed like
	// every call), the warranted filing, and the run's end.
	if !rep.Complete || !rep.StartAnchored || rep.Status != "completed" || rep.Checkpoint != 1 || rep.Covered != rep.LastSeq || len(rep.Receipts) != 4 {
		t.Fatalf("report %+v", rep)
	}
	// The sweeper signed the checkpoint also as a C2SP signed note, kept
	// with it and served in the bundle; it verified (issue 30 item 1).
	if b.Checkpoint.Note == "" || rep.NoteOrigin != evidence.Origin("", fixFirm) {
		t.Fatalf("the checkpoint's note: %q, verified under %q", b.Checkpoint.Note, rep.NoteOrigin)
	}
	start, search, eff, run := rep.Receipts[0], rep.Receipts[1], rep.Receipts[2], rep.Receipts[3]
	if start.Kind != evidence.KindStart || start.Seq != 1 || start.Outcome != evidence.OutcomeStarted || start.StartedAt == "" ||
		start.StartedAt != run.StartedAt || start.PolicySHA256 == "" || start.CatalogSHA256 == "" {
		t.Errorf("start receipt %+v", start)
	}
	if search.Kind != evidence.KindEffect || search.Authority != evidence.AuthorityPolicy || search.RiskTier != "low" || search.WarrantID != "" {
		t.Errorf("search receipt %+v", search)
	}
	if eff.Kind != evidence.KindEffect || eff.ToolName != "file_court_document" || eff.Authority != evidence.AuthorityWarrant ||
		eff.WarrantID != h.approvalID || eff.DecidedBy != fixCounsel || eff.DecidedAs != "counsel" || eff.InputSHA256 != h.hash ||
		eff.Outcome != "success" || eff.ApprovedAt == "" || eff.ExecutedAt == "" || eff.PolicySHA256 == "" || eff.PolicyVersion == "" ||
		eff.KeyID != keys.IDs()[0] {
		t.Errorf("effect receipt %+v", eff)
	}
	if run.Kind != evidence.KindRun || run.Outcome != "completed" || run.Seq != rep.LastSeq {
		t.Errorf("run receipt %+v", run)
	}
	// The desk's view says the same, verified.
	resp := s.post(getRoute(t, "GET /v1/runs/{run_id}/receipts", "/v1/runs/"+h.runID+"/receipts", map[string]string{"run_id": h.runID}, nil))
	dv := decode[handlers.ReceiptsView](t, resp)
	if resp.StatusCode != 200 || !dv.Verified || dv.Checkpoint != 1 || !dv.Complete || len(dv.Receipts) != 4 {
		t.Fatalf("receipts view: %d %+v", resp.StatusCode, dv)
	}
	// Redelivered records issue nothing new; a second sweep signs nothing.
	s.deliver(s.records(fixFirm, h.runID, 0))
	if rep := s.sweep(); rep.Checkpoints != 0 {
		t.Errorf("a sweep with nothing new signed %d checkpoints", rep.Checkpoints)
	}
	if got := s.bundle(h.runID, nil); len(got.Receipts) != 4 || len(got.Log.Entries) != 4 {
		t.Errorf("after redelivery: %d receipts, %d log entries, want 4 and 4", len(got.Receipts), len(got.Log.Entries))
	}
}

// TestEvidenceCheckpointNoteOrigin (issue 30 item 1): a deployment that
// names its own origin (CHECKPOINT_ORIGIN_PREFIX) has the sweeper sign its
// checkpoints' notes under it and the runs function check them under it (the
// desk's view verified); a verifier expecting the default origin refuses the
// note, naming it.
func TestEvidenceCheckpointNoteOrigin(t *testing.T) {
	const prefix = "evidence.acme.example/warrant"
	s := newStack(t, stackOptions{env: map[string]string{"CHECKPOINT_ORIGIN_PREFIX": prefix}})
	h := s.completedFiling(t)
	if rep := s.settle(h.runID); rep.Checkpoints != 1 || rep.CheckpointErrors != 0 {
		t.Fatalf("sweep: %+v, want one checkpoint", rep)
	}
	b := s.bundle(h.runID, nil)
	if !strings.HasPrefix(b.Checkpoint.Note, prefix+"/"+fixFirm+"\n") {
		t.Fatalf("the note: %q", b.Checkpoint.Note)
	}
	if rep, err := evidence.VerifyWith(b, s.trusted(), evidence.Options{OriginPrefix: prefix}); err != nil || rep.NoteOrigin != prefix+"/"+fixFirm {
		t.Fatalf("under the deployment's origin: %v %+v", err, rep)
	}
	if _, err := evidence.Verify(b, s.trusted()); err == nil || !strings.Contains(err.Error(), "checkpoint note") {
		t.Fatalf("under the default origin: %v", err)
	}
	resp := s.post(getRoute(t, "GET /v1/runs/{run_id}/receipts", "/v1/runs/"+h.runID+"/receipts", map[string]string{"run_id": h.runID}, nil))
	if dv := decode[handlers.ReceiptsView](t, resp); resp.StatusCode != 200 || !dv.Verified {
		t.Fatalf("receipts view: %d %+v", resp.StatusCode, dv)
	}
}

// tamper runs each case on a copy of b and wants Verify to fail naming why.
func TestEvidenceDetectsTampering(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	s.settle(h.runID)
	keys := s.trusted()
	good := s.bundle(h.runID, nil)
	other, err := evidence.ParseP256(otherReceiptKey)
	if err != nil {
		t.Fatal(err)
	}
	copyOf := func() evidence.Bundle {
		raw, _ := json.Marshal(good)
		var b evidence.Bundle
		_ = json.Unmarshal(raw, &b)
		return b
	}
	receipt := func(b evidence.Bundle, i int) evidence.Receipt {
		var r evidence.Receipt
		if err := json.Unmarshal([]byte(b.Receipts[i].Body), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name, want string
		edit       func(b *evidence.Bundle)
	}{
		{"an altered receipt", "signature does not verify", func(b *evidence.Bundle) {
			b.Receipts[1].Body = strings.Replace(b.Receipts[1].Body, `"outcome":"success"`, `"outcome":"error"`, 1)
		}},
		{"a receipt signed by another key", "not among the keys you trust", func(b *evidence.Bundle) {
			r := receipt(*b, 0)
			r.KeyID, r.IssuedAt = "", ""
			signed, err := evidence.Issue(context.Background(), other, r, contracts.FormatTime(s.clock.Now()))
			if err != nil {
				t.Fatal(err)
			}
			b.Receipts[0] = signed
		}},
		{"a receipt re-signed by another key under the firm's key id", "signature does not verify", func(b *evidence.Bundle) {
			r := receipt(*b, 0)
			signed, err := evidence.Sign(context.Background(), other, r)
			if err != nil {
				t.Fatal(err)
			}
			b.Receipts[0] = signed
		}},
		{"a dropped receipt", "does not carry", func(b *evidence.Bundle) { b.Receipts = b.Receipts[:2] }},
		{"a ledger that runs past its receipt", "seq", func(b *evidence.Bundle) {
			last, err := contracts.ParseEventLine([]byte(b.Ledger[len(b.Ledger)-1]))
			if err != nil {
				t.Fatal(err)
			}
			forged, err := contracts.ChainAfter(last).Next(&contracts.RunCompleted{StopReason: "end_turn", FinalText: "forged"})
			if err != nil {
				t.Fatal(err)
			}
			b.Ledger = append(b.Ledger, string(forged.Raw))
			b.Head = nil
		}},
		{"an altered log entry", "does not reach checkpoint", func(b *evidence.Bundle) {
			b.Log.Entries[1] = strings.Replace(b.Log.Entries[1], `"kind":"effect"`, `"kind":"run"`, 1)
		}},
		{"a forged checkpoint", "not among the keys you trust", func(b *evidence.Bundle) {
			var cp evidence.Checkpoint
			_ = json.Unmarshal([]byte(b.Checkpoint.Body), &cp)
			signed, _ := evidence.SignCheckpoint(context.Background(), other, cp)
			b.Checkpoint = &signed
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := copyOf()
			tc.edit(&b)
			_, err := evidence.Verify(b, keys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := evidence.Verify(copyOf(), keys); err != nil {
		t.Fatalf("the untampered copy: %v", err)
	}
}

// item reads or writes the table as an insider with table access does.
func (s *stack) items(pk string) []map[string]types.AttributeValue {
	s.t.Helper()
	out, err := s.client.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Items
}

func (s *stack) deleteItem(pk, sk string) {
	s.t.Helper()
	_, err := s.client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *stack) putItem(it map[string]types.AttributeValue) {
	s.t.Helper()
	if _, err := s.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it}); err != nil {
		s.t.Fatal(err)
	}
}

func skOf(it map[string]types.AttributeValue) string {
	return it["SK"].(*types.AttributeValueMemberS).Value
}

// TestEvidenceDetectsARollback: an insider restores the run item and ledger
// of the held run (a head the ledger key really signed) and deletes the
// receipts the table held for the lines after it. The ledger anchor alone
// is satisfied; the firm log is not.
func TestEvidenceDetectsARollback(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	pk := runPK(fixFirm, h.runID)
	var heldRun map[string]types.AttributeValue
	heldSeqs := map[string]bool{}
	for _, it := range s.items(pk) {
		if skOf(it) == "RUN" {
			heldRun = it
		}
		heldSeqs[skOf(it)] = true
	}
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	s.call(resumeReq(t, h))
	s.settle(h.runID)
	keys := s.trusted()
	if _, err := evidence.Verify(s.bundle(h.runID, nil), keys); err != nil {
		t.Fatalf("before the rollback: %v", err)
	}
	// The rollback.
	for _, it := range s.items(pk) {
		if sk := skOf(it); !heldSeqs[sk] {
			s.deleteItem(pk, sk)
		}
	}
	s.putItem(heldRun)
	if v := s.view(h.runID); v.Status != "held" || v.Ledger == nil || !v.Ledger.Verified {
		t.Fatalf("the rolled-back run should pass the ledger anchor: %+v", v)
	}
	_, err := evidence.Verify(s.bundle(h.runID, nil), keys)
	if err == nil || !strings.Contains(err.Error(), "rolled back") && !strings.Contains(err.Error(), "does not carry") {
		t.Fatalf("a rolled-back run: Verify says %v", err)
	}
	t.Logf("rollback detected: %v", err)
}

// TestEvidenceDetectsADeletedRun: an auditor holds the firm log and every
// run's bundle; an insider deletes one run's items.
func TestEvidenceDetectsADeletedRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	first := s.completedFiling(t)
	second := s.completedFiling(t)
	s.settle(first.runID)
	s.settle(second.runID)
	keys := s.trusted()
	log := s.firmLog()
	both := []evidence.Bundle{s.bundle(first.runID, nil), s.bundle(second.runID, nil)}
	rep, err := evidence.VerifyLog(log, keys, both)
	if err != nil || len(rep.Runs) != 2 {
		t.Fatalf("the whole firm log: %v %+v", err, rep)
	}
	pk := runPK(fixFirm, first.runID)
	for _, it := range s.items(pk) {
		s.deleteItem(pk, skOf(it))
	}
	resp := s.post(getRoute(t, "GET /v1/runs/{run_id}/evidence", "/v1/runs/"+first.runID+"/evidence", map[string]string{"run_id": first.runID}, nil))
	if resp.StatusCode != 404 {
		t.Fatalf("a deleted run's evidence: %d, want 404", resp.StatusCode)
	}
	_, err = evidence.VerifyLog(s.firmLog(), keys, []evidence.Bundle{s.bundle(second.runID, nil)})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("run %s", first.runID)) || !strings.Contains(err.Error(), "deleted or withheld") {
		t.Fatalf("a deleted run: VerifyLog says %v", err)
	}
}

// TestEvidenceCosts counts what evidence asks of KMS and DynamoDB for the
// demo's filing run (BENCHMARKS.md cites it): the HMAC head is signed once
// per append (kms:GenerateMac), a receipt once per claimed call and once at
// the run's end (kms:Sign), a checkpoint twice per firm per sweep that found
// new entries (its JSON body and its signed note, issue 30 item 1); and the DynamoDB round trips stream-reduce adds to issue them.
func TestEvidenceCosts(t *testing.T) {
	signs := &signCounts{}
	s := newStack(t, stackOptions{signs: signs})
	h := s.completedFiling(t)
	heads := signs.heads.Load()
	recs := s.records(fixFirm, h.runID, 0)

	// The same records through a stream-reduce without receipts, on a
	// second run, give the baseline round trips.
	s.ep.Counter.Reset()
	s.deliver(recs)
	withReceipts := s.ep.Counter.Count()
	receipts := signs.receipts.Load()
	rep := s.sweep()
	checkpoints := signs.receipts.Load() - receipts

	h2 := s.completedFiling(t)
	recs2 := s.records(fixFirm, h2.runID, 0)
	ev := s.reduce.Evidence
	s.reduce.Evidence = nil
	s.ep.Counter.Reset()
	s.deliver(recs2)
	without := s.ep.Counter.Count()
	s.reduce.Evidence = ev

	if receipts != 4 || checkpoints != 2 || rep.Checkpoints != 1 || heads < 5 {
		t.Fatalf("heads %d, receipts %d, checkpoints %d (%+v)", heads, receipts, checkpoints, rep)
	}
	lines := int64(len(recs))
	t.Logf("demo filing run: %d ledger lines, %d HMAC head signatures (kms:GenerateMac), %d receipts (kms:Sign), %d checkpoint signatures (kms:Sign, the JSON and the note, per firm per sweep)",
		lines, heads, receipts, checkpoints)
	t.Logf("stream-reduce of the run's %d records: %d DynamoDB round trips with receipts, %d without (+%d: the whole ledger read once more, and per receipt the log head and one transaction)",
		lines, withReceipts, without, withReceipts-without)
	if withReceipts-without != 2+2*int(receipts) {
		t.Errorf("receipts added %d round trips, want %d (a ledger read and a run read, then a head read and a transaction per receipt)", withReceipts-without, 2+2*receipts)
	}
}

// TestEvidenceKeyRotation: receipts signed before a rotation stay
// verifiable. The new key signs; the old one's public half is published as
// retired (RECEIPT_RETIRED_KEYS), and a verifier holding the published keys
// checks both runs.
func TestEvidenceKeyRotation(t *testing.T) {
	s := newStack(t, stackOptions{})
	before := s.completedFiling(t)
	s.settle(before.runID)
	oldKeys := s.trusted()

	// The rotation, as a redeploy with RECEIPT_KEY=<new> and
	// RECEIPT_RETIRED_KEYS=spki:<old> loads it.
	oldPub := oldKeys[oldKeys.IDs()[0]]
	der, err := x509.MarshalPKIXPublicKey(oldPub.Key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.runsCfg
	cfg.ReceiptKey, cfg.RetiredReceiptKeys = otherReceiptKey, "spki:"+base64.StdEncoding.EncodeToString(der)
	evk, err := wire.LoadEvidenceKeys(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*handlers.Evidence{s.reduce.Evidence, s.sweeper.Evidence, s.runs.Evidence} {
		e.Keys, e.Current = evk.Keys, evk.Signer.KeyID()
	}
	s.reduce.Evidence.Signer, s.sweeper.Evidence.Signer = evk.Signer, evk.Signer

	after := s.completedFiling(t)
	s.settle(after.runID)
	resp := s.post(getRoute(t, "GET /v1/keys", "/v1/keys", nil, nil))
	v := decode[struct {
		Keys []handlers.KeyView `json:"keys"`
	}](t, resp)
	var pems string
	signing := 0
	for _, k := range v.Keys {
		pems += k.PublicKeyPEM
		if k.Signing {
			signing++
			if k.KeyID != evk.Signer.KeyID() {
				t.Errorf("the signing key is %s, want the new %s", k.KeyID, evk.Signer.KeyID())
			}
		}
	}
	published, err := evidence.ParsePEM([]byte(pems))
	if err != nil || len(published) != 2 || signing != 1 {
		t.Fatalf("after the rotation GET /v1/keys publishes %d keys (%d signing): %v", len(published), signing, err)
	}
	for _, run := range []string{before.runID, after.runID} {
		rep, err := evidence.Verify(s.bundle(run, nil), published)
		if err != nil || !rep.Complete {
			t.Fatalf("run %s after the rotation: %v %+v", run, err, rep)
		}
		want := oldPub.ID
		if run == after.runID {
			want = evk.Signer.KeyID()
		}
		for _, r := range rep.Receipts {
			if r.KeyID != want {
				t.Errorf("run %s: a receipt signed by %s, want %s", run, r.KeyID, want)
			}
		}
	}
	// The new checkpoint is the new key's, chained to the old key's.
	if _, err := evidence.Verify(s.bundle(after.runID, nil), oldKeys); err == nil {
		t.Errorf("the new run's bundle verifies with the old key alone")
	}
}

// TestEvidenceOfAnUnknownOutcome: an effect whose worker was lost gets a
// receipt saying its outcome is unknown (never forgotten), the failed run a
// receipt of its end, and counsel's reconciliation a receipt of its own. A
// bundle whose ledger holds the reconciliation before a checkpoint covers its
// receipt runs past its last receipt and is refused until one does.
func TestEvidenceOfAnUnknownOutcome(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	s.loseWarrantedEffect(t, h)
	s.settle(h.runID)
	keys := s.trusted()
	rep, err := evidence.Verify(s.bundle(h.runID, nil), keys)
	if err != nil || !rep.Complete || rep.Status != "failed" {
		t.Fatalf("the failed run: %v %+v", err, rep)
	}
	var unknown *evidence.Receipt
	for i, r := range rep.Receipts {
		if r.Kind == evidence.KindEffect && r.ToolName == "file_court_document" {
			unknown = &rep.Receipts[i]
		}
	}
	if unknown == nil || unknown.Outcome != "unknown" || unknown.WarrantID != h.approvalID || rep.Receipts[len(rep.Receipts)-1].FailureKind != "effect_outcome_unknown" {
		t.Fatalf("receipts %+v", rep.Receipts)
	}

	ref := unknown.EffectRef
	if resp := s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "executed", "external_ref": "SF-2026-118734"})); resp.StatusCode != 200 {
		t.Fatalf("reconcile: %d %s", resp.StatusCode, resp.Body)
	}
	// The reconciliation is in the ledger; no checkpoint covers its receipt.
	if _, err := evidence.Verify(s.bundle(h.runID, nil), keys); err == nil || !strings.Contains(err.Error(), "seq 14 (reconciliation) has no receipt under checkpoint 1") {
		t.Fatalf("a ledger past its last receipt: Verify says %v", err)
	}
	s.settle(h.runID)
	rep, err = evidence.Verify(s.bundle(h.runID, nil), keys)
	if err != nil || !rep.Complete {
		t.Fatalf("after the next checkpoint: %v %+v", err, rep)
	}
	last := rep.Receipts[len(rep.Receipts)-1]
	if last.Kind != evidence.KindReconciliation || last.Outcome != "executed" || last.ReconciledBy != fixCounsel || last.EffectRef != ref {
		t.Fatalf("reconciliation receipt %+v", last)
	}
}

// repeatScript: the model searches, then asks for the very same search
// again (same input, so the same effect claim), then answers.
func repeatScript() *bedrocktest.Script {
	search := func(bedrocktest.Conversation) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"matter_id": fixMatter, "query": "motion"})
		return raw
	}
	turns := func(c bedrocktest.Conversation) int {
		n := 0
		for _, m := range c.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		return n
	}
	return &bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "search", When: func(c bedrocktest.Conversation) bool { return turns(c) == 0 },
			Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{Name: bedrocktest.ToolSearchMatterDocuments, InputFunc: search}}}},
		{Name: "search-again", When: func(c bedrocktest.Conversation) bool { return turns(c) == 1 },
			Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{Name: bedrocktest.ToolSearchMatterDocuments, InputFunc: search}}}},
		{Name: "answer", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: "Both searches found the motion."}},
	}}
}

// TestEvidenceOfARepeatedCall: a call the model repeats is answered from its
// effect's record (nothing runs again), and the evidence says it ran once:
// one effect receipt for the effect_ref, the repeat recorded as a reuse.
func TestEvidenceOfARepeatedCall(t *testing.T) {
	s := newStack(t, stackOptions{script: repeatScript()})
	resp := s.call(fixture(t, "invoke.json"))
	v := decode[handlers.RunView](t, resp)
	if resp.StatusCode != 200 || v.Status != "completed" {
		t.Fatalf("run: %d %s", resp.StatusCode, resp.Body)
	}
	var completed []*contracts.ToolCompleted
	for _, raw := range s.bundle(v.RunID, nil).Ledger {
		l, err := contracts.ParseEventLine([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := l.Event.(*contracts.ToolCompleted); ok {
			completed = append(completed, tc)
		}
	}
	if len(completed) != 2 || completed[0].EffectRef == "" || completed[1].EffectRef != completed[0].EffectRef {
		t.Fatalf("want two answers of one effect, got %+v", completed)
	}
	if completed[0].Reused || !completed[1].Reused {
		t.Errorf("the first answer ran (reused=%v), the second is a reuse (reused=%v)", completed[0].Reused, completed[1].Reused)
	}
	s.settle(v.RunID)
	rep, err := evidence.Verify(s.bundle(v.RunID, nil), s.trusted())
	if err != nil {
		t.Fatal(err)
	}
	effects := 0
	for _, r := range rep.Receipts {
		if r.Kind == evidence.KindEffect {
			effects++
			if r.EffectRef != completed[0].EffectRef {
				t.Errorf("effect receipt for %s", r.EffectRef)
			}
		}
	}
	if effects != 1 {
		t.Fatalf("%d effect receipts for one execution, want 1: %+v", effects, rep.Receipts)
	}
}

// forgeRun rewrites run's ledger as an insider with table access could: its
// run.started line moved to start (re-hashed), then end (re-chained), with
// no receipt. The result is a run that "never reached an effect".
func forgeRun(t *testing.T, real evidence.Bundle, start time.Time, end contracts.Event) []string {
	t.Helper()
	first, err := contracts.ParseEventLine([]byte(real.Ledger[0]))
	if err != nil {
		t.Fatal(err)
	}
	first.CreatedAt = contracts.FormatTime(start)
	moved, err := contracts.EncodeLine(first, first.Event)
	if err != nil {
		t.Fatal(err)
	}
	c := contracts.ChainAfter(moved)
	c.Now = func() time.Time { return start.Add(time.Second) }
	last, err := c.Next(end)
	if err != nil {
		t.Fatal(err)
	}
	return []string{string(moved.Raw), string(last.Raw)}
}

// segmentFrom is the firm log's entries from index from on, as an insider
// would cut them out of the log to serve a bundle.
func segmentFrom(log evidence.LogBundle, from int64) evidence.Segment {
	prev := evidence.Genesis
	for _, e := range log.Log.Entries[:from-1] {
		prev = evidence.Link(prev, e)
	}
	return evidence.Segment{From: from, Prev: prev, Entries: log.Log.Entries[from-1:]}
}

// TestEvidenceRefusesAMovedStart (issue 25 B): an insider serves a run's
// bundle with its start moved an hour later and a forged run.failed ("nothing
// was sent"), and a log segment that starts after the run's real receipts.
// Every run's start is in the firm log, so the segment must start at the
// run's own signed start, and this bundle cannot.
func TestEvidenceRefusesAMovedStart(t *testing.T) {
	s := newStack(t, stackOptions{})
	a := s.completedFiling(t) // its receipts: log entries 1 to 3 (4 with its start)
	s.settle(a.runID)
	real := s.bundle(a.runID, nil)
	realStart, _ := time.Parse(contracts.TimeLayout, mustLine(t, real.Ledger[0]).CreatedAt)
	s.clock.Advance(30 * time.Minute)
	b := s.completedFiling(t)
	s.settle(b.runID)
	s.clock.Advance(2 * time.Hour)
	keys := s.trusted()
	log := s.firmLog()
	// The first entry that is not run A's: where the forged segment starts.
	from := int64(0)
	for i, line := range log.Log.Entries {
		e, err := evidence.ParseEntry(line)
		if err != nil {
			t.Fatal(err)
		}
		if e.RunID != a.runID {
			from = int64(i) + 1
			break
		}
	}
	forged := real
	forged.Ledger = forgeRun(t, real, realStart.Add(time.Hour), &contracts.RunFailed{ErrorClass: "tool", ErrorMessage: "nothing was sent",
		FailureStage: "tool_execute", FailureKind: "tool_error", Failure: json.RawMessage(`{}`)})
	forged.Head, forged.Receipts, forged.Log, forged.Checkpoint = nil, []evidence.Signed{}, segmentFrom(log, from), log.Checkpoint
	rep, err := evidence.Verify(forged, keys)
	if err == nil || !strings.Contains(err.Error(), "the run's start is not in the log segment") {
		t.Fatalf("a run moved an hour later, its receipts before the segment: %v %+v", err, rep)
	}
	if _, err := evidence.Verify(real, keys); err != nil {
		t.Fatalf("the real bundle: %v", err)
	}
}

func mustLine(t *testing.T, raw string) contracts.Line {
	t.Helper()
	l, err := contracts.ParseEventLine([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// logPK is the firm log's partition.
func logPK(firm string) string { return "FIRM#" + firm + "#LOG" }

func numAttr(it map[string]types.AttributeValue, name string) int64 {
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return -1
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

func strAttr(it map[string]types.AttributeValue, name string) string {
	s, ok := it[name].(*types.AttributeValueMemberS)
	if !ok {
		return ""
	}
	return s.Value
}

// rewindLog is an insider with table write access only (no key): it
// deletes the firm log's entries past keep and points the log's head back at
// entry keep, as if nothing had been appended after it. Checkpoints are left
// as they are.
func (s *stack) rewindLog(firm string, keep int64) {
	s.t.Helper()
	var head map[string]types.AttributeValue
	var kept map[string]types.AttributeValue
	for _, it := range s.items(logPK(firm)) {
		sk := skOf(it)
		switch {
		case sk == "HEAD":
			head = it
		case strings.HasPrefix(sk, "ENT#") && numAttr(it, "i") > keep:
			s.deleteItem(logPK(firm), sk)
		case strings.HasPrefix(sk, "ENT#") && numAttr(it, "i") == keep:
			kept = it
		}
	}
	if head == nil || (kept == nil && keep > 0) {
		s.t.Fatalf("no log head, or no entry %d", keep)
	}
	head["size"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(keep, 10)}
	if keep == 0 {
		head["head"] = &types.AttributeValueMemberS{Value: evidence.Genesis}
	} else {
		head["head"], head["last_at"] = kept["chain"], kept["at"]
	}
	s.putItem(head)
}

// TestEvidenceRefusesReceiptsRemovedBeforeACheckpoint (issue 25 E): an
// insider deletes a completed run's receipts and log entries that no
// checkpoint covers yet, and rewinds the log's head, so the next checkpoint
// signs a log without them. A checkpoint signed more than evidence.Skew after
// a line that calls for a receipt must cover that receipt: the run's bundle is
// refused, not "pending" forever.
func TestEvidenceRefusesReceiptsRemovedBeforeACheckpoint(t *testing.T) {
	s := newStack(t, stackOptions{})
	run := s.receiptsRemovedRun(t)
	rep, err := evidence.Verify(s.bundle(run, nil), s.trusted())
	if err == nil || !strings.Contains(err.Error(), "receipt was removed") {
		t.Fatalf("a completed run whose receipts were removed before the checkpoint: %v %+v", err, rep)
	}
}

// receiptsRemovedRun completes a filing run, issues its receipts, then (as
// an insider) removes every one but its start, with their log entries, and
// rewinds the log's head to the start's entry; a sweep more than
// evidence.Skew later signs a checkpoint without them.
func (s *stack) receiptsRemovedRun(t *testing.T) string {
	t.Helper()
	h := s.completedFiling(t)
	if resp := s.deliver(s.records(fixFirm, h.runID, 0)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("stream-reduce: %+v", resp)
	}
	var start int64
	for _, it := range s.items(runPK(fixFirm, h.runID)) {
		switch sk := skOf(it); {
		case !strings.HasPrefix(sk, "RCPT#"):
		case sk == "RCPT#000000000001" && strAttr(it, "kind") == evidence.KindStart:
			start = numAttr(it, "log_index")
		default:
			s.deleteItem(runPK(fixFirm, h.runID), sk)
		}
	}
	if start == 0 {
		t.Fatal("the run has no start receipt")
	}
	s.rewindLog(fixFirm, start)
	s.clock.Advance(evidence.Skew + time.Minute)
	if rep := s.sweep(); rep.Checkpoints != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
	return h.runID
}

// TestEvidenceSignerRefusesAFork (issue 25 C): with table write access only,
// an insider deletes run V (an executed, warranted filing), its log entries
// and checkpoint 2, and points the log's head back at checkpoint 1; the next
// run's entries refill the log. The sweeper must not sign a second, different
// checkpoint 2: it reads the last checkpoint it signed from where the table's
// writers cannot reach, re-walks the entries since, and refuses, loudly.
func TestEvidenceSignerRefusesAFork(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CHECKPOINT_DIR": t.TempDir()}})
	a := s.completedFiling(t)
	if rep := s.settle(a.runID); rep.Checkpoints != 1 {
		t.Fatalf("checkpoint 1: %+v", rep)
	}
	var head1 map[string]types.AttributeValue
	for _, it := range s.items(logPK(fixFirm)) {
		if skOf(it) == "HEAD" {
			head1 = it
		}
	}
	v := s.completedFiling(t)
	if rep := s.settle(v.runID); rep.Checkpoints != 1 {
		t.Fatalf("checkpoint 2: %+v", rep)
	}
	// The insider's work: V's partition, its entries and checkpoint 2 gone,
	// the head as it stood at checkpoint 1.
	for _, it := range s.items(runPK(fixFirm, v.runID)) {
		s.deleteItem(runPK(fixFirm, v.runID), skOf(it))
	}
	for _, it := range s.items(logPK(fixFirm)) {
		if sk := skOf(it); (strings.HasPrefix(sk, "ENT#") && numAttr(it, "i") > numAttr(head1, "size")) || sk == "CKP#000000000002" {
			s.deleteItem(logPK(fixFirm), sk)
		}
	}
	s.putItem(head1)
	w := s.completedFiling(t)
	if resp := s.deliver(s.records(fixFirm, w.runID, 0)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("stream-reduce: %+v", resp)
	}
	s.logs.Reset()
	rep := s.sweep()
	if rep.Checkpoints != 0 || rep.CheckpointErrors != 1 {
		t.Fatalf("the sweeper signed a fork of the firm log: %+v", rep)
	}
	if !strings.Contains(s.logs.String(), `"failure_kind":"firm_log_diverged"`) {
		t.Fatalf("no firm_log_diverged failure logged:\n%s", s.logs.String())
	}
	if _, err := s.store.Checkpoint(context.Background(), fixFirm, 2); err == nil {
		t.Fatal("the table holds a checkpoint 2 again")
	}
	// The auditor's view: VerifyLog with the table's log does not accept it
	// either (its checkpoint is still 1, and V's entries are gone from it).
	if _, err := evidence.VerifyLog(s.firmLog(), s.trusted(), []evidence.Bundle{s.bundle(a.runID, nil), s.bundle(w.runID, nil)}); err == nil {
		lg := s.firmLog()
		t.Logf("the table's log (checkpoint %s) verifies against its own checkpoint 1; no forged checkpoint covers W", lg.Checkpoint.Body)
	}
}

// TestEvidenceInParts (issue 25, item 8): a run whose evidence bundle is
// more than one Lambda answer holds (two 200,000-character filings, each
// character one that JSON escapes twice on the way out) is answered 413
// naming how many parts to fetch and how, never a 502; each part fits an
// answer, and the parts joined verify as the whole. The run is in the clear
// (no DATA_KEY): sealed, the escaped characters would be base64, which
// JSON does not escape, and the bundle would fit.
func TestEvidenceInParts(t *testing.T) {
	turns := func(c bedrocktest.Conversation) int {
		n := 0
		for _, m := range c.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		return n
	}
	file := func(text string) []bedrocktest.ToolUse {
		raw, _ := json.Marshal(bigFiling("Motion to Compel", filingText(text, 200_000)))
		return []bedrocktest.ToolUse{{Name: bedrocktest.ToolFileCourtDocument, Input: raw}}
	}
	script := &bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "file-first", When: func(c bedrocktest.Conversation) bool { return turns(c) == 0 }, Reply: bedrocktest.Reply{ToolUses: file("<&>")}},
		{Name: "file-second", When: func(c bedrocktest.Conversation) bool { return turns(c) == 1 }, Reply: bedrocktest.Reply{ToolUses: file("&<>")}},
		{Name: "filed", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: bedrocktest.DemoFiledText}},
	}}
	// The fake model bills each filing's characters as output tokens.
	s := newStack(t, stackOptions{plain: true, script: script, env: map[string]string{"MAX_COST_CAP_USD": "100.00", "FIRM_MONTHLY_BUDGET_USD": "1000.00"}})
	resp := s.call(fixture(t, "invoke.json").editBody(func(m map[string]any) { m["cost_cap_usd"] = "100.00" }))
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: %d %.300s", resp.StatusCode, resp.Body)
	}
	v := decode[handlers.RunView](t, resp)
	for i := 0; i < 2; i++ {
		h := heldOn(t, v)
		if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
			t.Fatalf("approve filing %d: %d %.300s", i+1, resp.StatusCode, resp.Body)
		}
		v = decode[handlers.RunView](t, s.call(resumeReq(t, h)))
	}
	if v.Status != "completed" {
		t.Fatalf("the run: %+v", v)
	}
	h := held{runID: v.RunID}
	s.settle(h.runID)
	get := func(query map[string]string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp := s.post(getRoute(t, "GET /v1/runs/{run_id}/evidence", "/v1/runs/"+h.runID+"/evidence", map[string]string{"run_id": h.runID}, query))
		payload, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if len(payload) > 6_291_456 {
			t.Fatalf("an answer of %d bytes: Lambda refuses a response payload over 6 MB", len(payload))
		}
		return resp
	}
	resp = get(nil)
	if resp.StatusCode != 413 || resp.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("the whole bundle: %d %.300s", resp.StatusCode, resp.Body)
	}
	var p struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &p)
	m := regexp.MustCompile(`fetch it in (\d+) parts, \?(checkpoint=(\d+)&seq=(\d+))&part=1`).FindStringSubmatch(p.Detail)
	if m == nil {
		t.Fatalf("the 413 does not say how to page: %q", p.Detail)
	}
	n, _ := strconv.Atoi(m[1])
	var parts []evidence.Bundle
	for i := 1; i <= n; i++ {
		resp := get(map[string]string{"checkpoint": m[3], "seq": m[4], "part": strconv.Itoa(i)})
		if resp.StatusCode != 200 {
			t.Fatalf("part %d: %d %.300s", i, resp.StatusCode, resp.Body)
		}
		var b evidence.Bundle
		if err := contracts.DecodeStrict([]byte(resp.Body), &b); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b)
	}
	keys := s.trusted()
	if _, err := evidence.Verify(parts[0], keys); err == nil || !strings.Contains(err.Error(), "join the parts first") {
		t.Fatalf("a part alone: %v", err)
	}
	slices.Reverse(parts)
	whole, err := evidence.Join(parts)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := evidence.Verify(whole, keys); err != nil || !rep.Complete {
		t.Fatalf("the joined parts: %v %+v", err, rep)
	}
	// As one answer, the bundle would have been more than Lambda returns.
	one, _ := json.Marshal(httpapi.JSON(200, whole, ""))
	if len(one) <= 6_291_456 {
		t.Fatalf("the bundle is %d bytes as one answer: the test proves nothing", len(one))
	}
	t.Logf("the bundle as one answer: %d bytes; in %d parts", len(one), n)
	// docs/EVIDENCE.md's join, exactly as written, and warrant evidence
	// verify on the parts themselves.
	needTools(t)
	files := map[string][]byte{"key.pem": []byte(keys[keys.IDs()[0]].PEM())}
	for _, p := range parts {
		files[fmt.Sprintf("part-%d.json", p.Part.Number)] = jsonOf(t, p)
	}
	dir := writeFiles(t, files)
	join := docCommand(t, "jq -s 'sort_by(.part.number)")
	if out, err := exec.Command("bash", "-c", "cd "+dir+" && "+join).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", join, err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var joined evidence.Bundle
	if err := contracts.DecodeStrict(raw, &joined); err != nil {
		t.Fatalf("the joined bundle: %v", err)
	}
	if rep, err := evidence.Verify(joined, keys); err != nil || !rep.Complete {
		t.Fatalf("the bundle jq joined: %v %+v", err, rep)
	}
	cli := buildCLI(t)
	args := []string{"--public-key", "key.pem"}
	for k := range files {
		if strings.HasPrefix(k, "part-") {
			args = append(args, k)
		}
	}
	if out, ok := runCLI(t, cli, files, args...); !ok || !strings.Contains(out, `"complete": true`) {
		t.Fatalf("warrant evidence verify on the parts: %v\n%s", ok, out)
	}
	if out, ok := runCLI(t, cli, files, "--public-key", "key.pem", "part-2.json"); ok || !strings.Contains(out, "not parts 1 to") {
		t.Fatalf("warrant evidence verify, a part missing: %v\n%s", ok, out)
	}
	if _, err := evidence.Join(parts[1:]); err == nil {
		t.Fatal("a part missing: joined")
	}
	for q, want := range map[string]string{"part=9": "part:", "seq=999": "seq:"} {
		k, v, _ := strings.Cut(q, "=")
		query := map[string]string{"checkpoint": m[3], "seq": m[4], "part": "1"}
		query[k] = v
		if resp := get(query); resp.StatusCode != 400 || !strings.Contains(resp.Body, want) {
			t.Errorf("%s: %d %.300s", q, resp.StatusCode, resp.Body)
		}
	}
	if resp := get(map[string]string{"part": "1"}); resp.StatusCode != 400 || !strings.Contains(resp.Body, "part:") {
		t.Errorf("a part without seq: %d %.300s", resp.StatusCode, resp.Body)
	}
}

// docCommand is the one command of docs/EVIDENCE.md's ```sh blocks that
// starts with prefix, as written.
func docCommand(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "EVIDENCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			found = append(found, line)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/EVIDENCE.md has %d commands starting %q", len(found), prefix)
	}
	return found[0]
}
