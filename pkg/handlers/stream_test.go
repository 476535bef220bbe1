package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/gowebpki/jcs"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

func runPK(firm, run string) string { return "FIRM#" + firm + "#RUN#" + run }

// streamSeq numbers stream records; real sequence numbers are opaque,
// increasing decimal strings.
var streamSeq atomic.Int64

// records builds the INSERT records the table's stream would carry for the
// run's ledger items after afterSeq, shaped like events/stream-reduce.json.
func (s *stack) records(firm, run string, afterSeq int64) []events.DynamoDBEventRecord {
	s.t.Helper()
	out, err := s.client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: runPK(firm, run)},
			":lo": &types.AttributeValueMemberS{Value: fmt.Sprintf("EVT#%012d", afterSeq+1)},
			":hi": &types.AttributeValueMemberS{Value: "EVT#999999999999"},
		},
	})
	if err != nil {
		s.t.Fatalf("query ledger items: %v", err)
	}
	var recs []events.DynamoDBEventRecord
	for _, it := range out.Items {
		img := map[string]events.DynamoDBAttributeValue{}
		size := 0
		for k, v := range it {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				img[k] = events.NewStringAttribute(v.Value)
				size += len(k) + len(v.Value)
			case *types.AttributeValueMemberN:
				img[k] = events.NewNumberAttribute(v.Value)
				size += len(k) + len(v.Value)
			default:
				s.t.Fatalf("ledger item attribute %s is %T", k, v)
			}
		}
		n := streamSeq.Add(1)
		recs = append(recs, events.DynamoDBEventRecord{
			EventID: fmt.Sprintf("%032x", n), EventName: "INSERT", EventVersion: "1.1", EventSource: "aws:dynamodb",
			AWSRegion:      "us-east-1",
			EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + s.table + "/stream/2026-11-30T09:12:44.318",
			Change: events.DynamoDBStreamRecord{
				Keys:           map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]},
				NewImage:       img,
				SequenceNumber: fmt.Sprintf("44215845%020d", n),
				SizeBytes:      int64(size),
				StreamViewType: "NEW_IMAGE",
			},
		})
	}
	return recs
}

// deliver sends a batch through aws-lambda-go's JSON path, as the event
// source mapping does.
func (s *stack) deliver(recs []events.DynamoDBEventRecord) events.DynamoDBEventResponse {
	s.t.Helper()
	payload, err := json.Marshal(events.DynamoDBEvent{Records: recs})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.deliverRaw(payload)
}

func (s *stack) deliverRaw(payload []byte) events.DynamoDBEventResponse {
	s.t.Helper()
	out, err := lambda.NewHandler(s.reduce.Handle).Invoke(context.Background(), payload)
	if err != nil {
		s.t.Fatalf("stream-reduce: %v", err)
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		s.t.Fatalf("stream-reduce response: %v: %s", err, out)
	}
	return resp
}

func (s *stack) projection(firm, run string) warrant.Projection {
	s.t.Helper()
	r, err := s.store.GetRun(context.Background(), firm, run)
	if err != nil {
		s.t.Fatal(err)
	}
	return r.Projection
}

// fold is the reducer's state of the run's whole stored ledger, as JSON.
func (s *stack) fold(firm, run string) (string, int64) {
	s.t.Helper()
	items, _, err := s.store.ReadLedger(context.Background(), firm, run, 0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	var lines []contracts.Line
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			s.t.Fatal(err)
		}
		lines = append(lines, l)
	}
	st, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		s.t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	return string(b), int64(len(lines))
}

func failedIDs(resp events.DynamoDBEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

func seqNums(recs []events.DynamoDBEventRecord) []string {
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Change.SequenceNumber)
	}
	slices.Sort(ids)
	return ids
}

func shuffled(recs []events.DynamoDBEventRecord, seed uint64) []events.DynamoDBEventRecord {
	out := slices.Clone(recs)
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// completeRun runs invoke -> approve -> resume on the stack.
func (s *stack) completeRun(t *testing.T) held {
	h := s.startHeld(t)
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := s.call(resumeReq(t, h)); resp.StatusCode != 200 {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	return h
}

func TestStreamReduceRedeliveryAndOrder(t *testing.T) {
	s := newStack(t, stackOptions{})

	// Run X: projected while held, then again after it completes, with
	// old and new records shuffled, duplicated and redelivered.
	x := s.startHeld(t)
	heldRecs := s.records(fixFirm, x.runID, 0)
	if resp := s.deliver(shuffled(heldRecs, 1)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("held batch: failures %v", resp.BatchItemFailures)
	}
	p := s.projection(fixFirm, x.runID)
	if p.Status != "held" || p.LastSeq != int64(len(heldRecs)) || p.Halted != "" {
		t.Fatalf("held projection: status %q last_seq %d (ledger %d) halted %q", p.Status, p.LastSeq, len(heldRecs), p.Halted)
	}
	// GET run without consistent reads the projection: held, with the warrant.
	if v := decode[handlers.RunView](t, s.call(fixture(t, "get-run.json").runPath(x.runID, ""))); v.Status != "held" ||
		v.PendingApproval == nil || v.PendingApproval.ApprovalRequestID != x.approvalID {
		t.Fatalf("get run from the held projection: %+v", v)
	}
	if resp := s.call(approveReq(t, x, "approve", x.hash)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	if resp := s.call(resumeReq(t, x)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	newRecs := s.records(fixFirm, x.runID, int64(len(heldRecs)))
	mixed := shuffled(append(append(slices.Clone(newRecs), heldRecs[:3]...), newRecs...), 2)
	if resp := s.deliver(mixed); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("mixed batch: failures %v", resp.BatchItemFailures)
	}
	wantState, wantSeq := s.fold(fixFirm, x.runID)
	first := s.projection(fixFirm, x.runID)
	if string(first.State) != wantState || first.LastSeq != wantSeq || first.Status != "completed" {
		t.Fatalf("projection after shuffled delivery:\n got %s (seq %d)\nwant %s (seq %d)", first.State, first.LastSeq, wantState, wantSeq)
	}
	all := s.records(fixFirm, x.runID, 0)
	for i := range 3 {
		if resp := s.deliver(all); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery %d: failures %v", i, resp.BatchItemFailures)
		}
		if p := s.projection(fixFirm, x.runID); string(p.State) != string(first.State) || p.LastSeq != wantSeq || !p.UpdatedAt.Equal(first.UpdatedAt) {
			t.Fatalf("redelivery %d changed the projection: %s", i, p.State)
		}
	}
	if v := decode[handlers.RunView](t, s.call(fixture(t, "get-run.json").runPath(x.runID, ""))); v.Status != "completed" || v.ProjectedThroughSeq != wantSeq {
		t.Fatalf("get run from the projection: %+v", v)
	}

	// Run Y: the whole ledger in order, three times; then shuffled.
	y := s.completeRun(t)
	yRecs := s.records(fixFirm, y.runID, 0)
	for i := range 3 {
		if resp := s.deliver(yRecs); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Y delivery %d: failures %v", i, resp.BatchItemFailures)
		}
	}
	yState, ySeq := s.fold(fixFirm, y.runID)
	py := s.projection(fixFirm, y.runID)
	if string(py.State) != yState || py.LastSeq != ySeq {
		t.Fatalf("Y projection %s (seq %d), want %s (seq %d)", py.State, py.LastSeq, yState, ySeq)
	}
	if resp := s.deliver(shuffled(yRecs, 3)); len(resp.BatchItemFailures) != 0 || string(s.projection(fixFirm, y.runID).State) != yState {
		t.Fatalf("Y shuffled redelivery: %v", resp.BatchItemFailures)
	}

	// Records that are not a run's partition are skipped, not failed.
	odd := s.records(fixFirm, y.runID, ySeq-1)
	odd[0].Change.Keys["PK"] = events.NewStringAttribute("FIRM#" + fixFirm + "#WARRANTS#pending")
	odd = append(odd, odd[0])
	odd[1].Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("FIRM#not-a-uuid#RUN#" + y.runID)}
	if resp := s.deliver(odd); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("foreign records: failures %v", resp.BatchItemFailures)
	}
}

// TestStreamReduceFixture: events/stream-reduce.json as it is drives the
// reducer for the run the invoke fixture started (the records are
// triggers; the ledger is read from the table).
func TestStreamReduceFixture(t *testing.T) {
	s := newStack(t, stackOptions{newID: func() string { return fixRun }})
	s.startHeld(t)
	resp := s.deliverRaw(loadFixture(t, "stream-reduce.json"))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	want, seq := s.fold(fixFirm, fixRun)
	if p := s.projection(fixFirm, fixRun); string(p.State) != want || p.LastSeq != seq || p.Status != "held" {
		t.Fatalf("projection %s (seq %d), want %s (seq %d)", p.State, p.LastSeq, want, seq)
	}
}

// putLine stores raw as the run's ledger line at seq, bypassing the store's
// checks, as a corrupting writer (or a newer writer) would.
func (s *stack) putLine(firm, run string, seq int64, typ, raw string) {
	s.t.Helper()
	_, err := s.client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"PK":         &types.AttributeValueMemberS{Value: runPK(firm, run)},
			"SK":         &types.AttributeValueMemberS{Value: fmt.Sprintf("EVT#%012d", seq)},
			"seq":        &types.AttributeValueMemberN{Value: strconv.FormatInt(seq, 10)},
			"type":       &types.AttributeValueMemberS{Value: typ},
			"line":       &types.AttributeValueMemberS{Value: raw},
			"created_at": &types.AttributeValueMemberS{Value: "2026-12-02T17:31:43.230Z"},
		},
	})
	if err != nil {
		s.t.Fatalf("put line: %v", err)
	}
}

// sealed gives a line edited as JSON its own hash again (SHA-256 of its
// RFC 8785 form without the hash member), as a writer that knows its type
// would have stored it.
func sealed(t *testing.T, raw string) (string, string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hash")
	b, _ := json.Marshal(m)
	c, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	m["hash"] = hex.EncodeToString(sum[:])
	b, _ = json.Marshal(m)
	c, err = jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(c), m["hash"].(string)
}

// signHead moves the run's signed head to seq and hash with the store's
// key, as the writer of that line does in the same transaction.
func (s *stack) signHead(firm, run string, seq int64, hash string) {
	s.t.Helper()
	mac, keyID, err := s.keys.SignHead(context.Background(), firm, run, seq, hash)
	if err != nil {
		s.t.Fatal(err)
	}
	dynamotest.Update(s.t, s.client, s.table, runPK(firm, run), "RUN", "SET head_seq = :q, head_hash = :h, head_mac = :m, head_key = :k",
		nil, map[string]any{":q": seq, ":h": hash, ":m": mac, ":k": keyID})
}

// nextLine is the run's last line re-addressed to the next seq and chained
// to it, with edit applied to its JSON; its hash is left as it was, so it
// does not verify.
func (s *stack) nextLine(firm, run string, edit func(m map[string]any)) (int64, string, string) {
	s.t.Helper()
	last, err := s.store.LastLine(context.Background(), firm, run)
	if err != nil {
		s.t.Fatal(err)
	}
	l, err := contracts.ParseEventLine(last.Raw)
	if err != nil {
		s.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(last.Raw, &m); err != nil {
		s.t.Fatal(err)
	}
	m["seq"], m["prev_hash"] = l.Seq+1, l.Hash
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	return l.Seq + 1, m["type"].(string), string(b)
}

func TestStreamReduceCorruptRunFailsAlone(t *testing.T) {
	s := newStack(t, stackOptions{})
	good := s.completeRun(t)
	bad := s.startHeld(t)

	seq, typ, raw := s.nextLine(fixFirm, bad.runID, nil)
	if _, err := contracts.ParseEventLine([]byte(raw)); !errors.Is(err, contracts.ErrHashMismatch) {
		t.Fatalf("the corrupt line should fail its hash, got %v", err)
	}
	s.putLine(fixFirm, bad.runID, seq, typ, raw)

	goodRecs := s.records(fixFirm, good.runID, 0)
	badRecs := s.records(fixFirm, bad.runID, 0)
	batch := shuffled(append(slices.Clone(goodRecs), badRecs...), 4)
	resp := s.deliver(batch)
	if got, want := failedIDs(resp), seqNums(badRecs); !slices.Equal(got, want) {
		t.Fatalf("batch item failures %v, want exactly the corrupt run's records %v", got, want)
	}
	want, wantSeq := s.fold(fixFirm, good.runID)
	if p := s.projection(fixFirm, good.runID); string(p.State) != want || p.LastSeq != wantSeq {
		t.Fatalf("the good run's projection did not advance: seq %d, want %d", p.LastSeq, wantSeq)
	}
	if p := s.projection(fixFirm, bad.runID); p.LastSeq != 0 || p.Halted != "" {
		t.Fatalf("the corrupt run's projection moved: %+v", p)
	}
	// Retried alone, it fails again; the ledger is not "repaired" by retrying.
	if got := failedIDs(s.deliver(badRecs)); len(got) != len(badRecs) {
		t.Fatalf("retry: failures %v", got)
	}
	// GET ?consistent=true on the corrupt run is a problem, not a wrong view.
	before := s.scan()
	s.wantProblem("consistent read of a corrupt ledger",
		s.call(fixture(t, "get-run.json").runPath(bad.runID, "").query(map[string]string{"consistent": "true"})), 500)
	s.wantUnchanged("consistent read of a corrupt ledger", before)
}

func TestStreamReduceUnknownEventHalts(t *testing.T) {
	s := newStack(t, stackOptions{})
	other := s.completeRun(t)
	r := s.startHeld(t)
	heldSeq := int64(len(s.records(fixFirm, r.runID, 0)))

	// A line of a type this reducer does not know, from a newer writer:
	// its own hash verifies, it chains to the last line, and the writer
	// moved the run's signed head to it. ParseEventLine reports the
	// unknown type; the fold stops there and follows the chain by the
	// lines' headers to the head.
	seq, _, raw := s.nextLine(fixFirm, r.runID, func(m map[string]any) {
		m["type"], m["payload"] = "run.paused", map[string]any{"reason": "a newer writer"}
	})
	raw, hash := sealed(t, raw)
	if _, err := contracts.ParseEventLine([]byte(raw)); !errors.Is(err, contracts.ErrUnknownEvent) {
		t.Fatalf("ParseEventLine of an unknown type: %v, want ErrUnknownEvent", err)
	}
	s.putLine(fixFirm, r.runID, seq, "run.paused", raw)
	s.signHead(fixFirm, r.runID, seq, hash)

	batch := append(s.records(fixFirm, r.runID, 0), s.records(fixFirm, other.runID, 0)...)
	for i := range 2 {
		if resp := s.deliver(shuffled(batch, uint64(5+i))); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: an unknown event must not fail the batch: %v", i, resp.BatchItemFailures)
		}
		p := s.projection(fixFirm, r.runID)
		if p.Halted == "" || p.LastSeq != heldSeq || p.Status != "held" {
			t.Fatalf("delivery %d: projection %+v, want halted at seq %d", i, p, heldSeq)
		}
	}
	if want, seq := s.fold(fixFirm, other.runID); string(s.projection(fixFirm, other.runID).State) != want ||
		s.projection(fixFirm, other.runID).LastSeq != seq {
		t.Fatalf("the other run's projection did not advance")
	}
	if !containsAll(s.logs.String(), "unknown_event", r.runID) {
		t.Errorf("no unknown_event failure envelope logged for the run")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
