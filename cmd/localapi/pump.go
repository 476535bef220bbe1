package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

// Feed delivers new ledger lines to stream-reduce as DynamoDB stream
// events, the way the event source mapping would: INSERT records of EVT#
// items (the template's filter), NEW_IMAGE, at most BatchSize a batch, one
// batch per run in seq order, ReportBatchItemFailures retried up to the
// template's MaximumRetryAttempts.
type Feed interface {
	// Track names a run partition the API touched (its firm and run id).
	Track(firm, run string)
	// Kick asks for a delivery round now (after an invocation).
	Kick()
	// Run delivers until ctx ends.
	Run(ctx context.Context)
}

// Deliverer invokes stream-reduce with one batch and reads its answer.
type Deliverer struct {
	Reducer   *rie.Emulator
	Log       io.Writer // one line per batch
	ErrLog    io.Writer // BatchItemFailures and errors
	Delivered func()    // after each batch (the pids file is refreshed)
}

// Send delivers records (one run's, in seq order) and returns the
// ItemIdentifiers stream-reduce reported as failed.
func (d *Deliverer) Send(ctx context.Context, records []events.DynamoDBEventRecord, what string) ([]string, error) {
	payload, err := json.Marshal(events.DynamoDBEvent{Records: records})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	out, err := d.Reducer.Invoke(ctx, payload)
	if d.Delivered != nil {
		d.Delivered()
	}
	if err != nil {
		return nil, err
	}
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("stream-reduce answered %s", out)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if len(failed) == 0 {
		fmt.Fprintf(d.Log, "%s stream: %s (%d records) -> stream-reduce ok (%s)\n",
			time.Now().Format(time.RFC3339Nano), what, len(records), time.Since(t0).Round(time.Millisecond))
	}
	return failed, nil
}

// Pump is the Feed for an endpoint without streams (minidyn): it tracks
// the run partitions the API has touched (the run_id in a path or a
// response, with the caller's firm) and Queries each for EVT# items above
// what it has delivered (a per-run high-water mark). It never Scans. It runs
// after every invocation and every 200 ms while a run is not finished.
type Pump struct {
	DDB       *dynamodb.Client
	Table     string
	Region    string
	BatchSize int
	D         *Deliverer

	mu     sync.Mutex
	runs   map[runKey]*runMark
	kick   chan struct{}
	seqNum int64
	arn    string
}

type runKey struct{ firm, run string }

type runMark struct {
	delivered int64 // highest seq delivered and acknowledged
	attempts  int   // failed deliveries of the next batch
	terminal  bool  // a run.completed or run.failed line was delivered
}

// maxAttempts is the template's MaximumRetryAttempts plus the first try.
const maxAttempts = 6

// NewPump returns a pump; start it with Run.
func NewPump(ddb *dynamodb.Client, table, region string, batchSize int, d *Deliverer) *Pump {
	return &Pump{DDB: ddb, Table: table, Region: region, BatchSize: batchSize, D: d,
		runs: map[runKey]*runMark{}, kick: make(chan struct{}, 1)}
}

// Track registers a run partition; new lines in it will be delivered.
func (p *Pump) Track(firm, run string) {
	if _, _, ok := dynamo.ParseRunKey(dynamo.RunKey(firm, run)); !ok {
		return // not ids of a run: nothing of a run lives there
	}
	p.mu.Lock()
	k := runKey{firm, run}
	if m, ok := p.runs[k]; ok {
		m.terminal = false // touched again: look once more
	} else {
		p.runs[k] = &runMark{}
	}
	p.mu.Unlock()
	p.Kick()
}

// Kick asks for a delivery round now.
func (p *Pump) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
func (p *Pump) Run(ctx context.Context) {
	if p.BatchSize <= 0 {
		p.BatchSize = 100
	}
	p.arn = fmt.Sprintf("arn:aws:dynamodb:%s:000000000000:table/%s/stream/%s", p.Region, p.Table, time.Now().UTC().Format("2006-01-02T15:04:05.000"))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-tick.C:
		}
		p.round(ctx)
	}
}

// round delivers what is new in every run that is not finished, one batch
// per run at a time, runs in a stable order.
func (p *Pump) round(ctx context.Context) {
	p.mu.Lock()
	keys := make([]runKey, 0, len(p.runs))
	for k, m := range p.runs {
		if !m.terminal {
			keys = append(keys, k)
		}
	}
	p.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool { return keys[i].run < keys[j].run })
	for _, k := range keys {
		for ctx.Err() == nil {
			more, err := p.deliver(ctx, k)
			if err != nil {
				if ctx.Err() == nil {
					fmt.Fprintf(p.D.ErrLog, "stream: run %s: %v\n", k.run, err)
				}
				break
			}
			if !more {
				break
			}
		}
	}
}

// deliver sends the next batch of run k; more says another batch is waiting.
func (p *Pump) deliver(ctx context.Context, k runKey) (more bool, err error) {
	p.mu.Lock()
	m := p.runs[k]
	after := m.delivered
	p.mu.Unlock()

	pk := dynamo.RunKey(k.firm, k.run)
	const kc = "#PK = :pk AND #SK BETWEEN :from AND :to"
	out, err := p.DDB.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(p.Table),
		KeyConditionExpression:   aws.String(kc),
		ExpressionAttributeNames: map[string]string{"#PK": "PK", "#SK": "SK"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: pk},
			":from": &types.AttributeValueMemberS{Value: fmt.Sprintf("EVT#%012d", after+1)},
			":to":   &types.AttributeValueMemberS{Value: "EVT#999999999999"},
		},
		ConsistentRead: aws.Bool(true),
		Limit:          aws.Int32(int32(p.BatchSize + 1)),
	})
	if err != nil {
		return false, fmt.Errorf("query: %w", err)
	}
	items := out.Items
	if len(items) == 0 {
		return false, nil
	}
	more = len(items) > p.BatchSize || len(out.LastEvaluatedKey) > 0
	if len(items) > p.BatchSize {
		items = items[:p.BatchSize]
	}
	var records []events.DynamoDBEventRecord
	seqs := make([]int64, len(items))
	terminal := false
	for i, it := range items {
		seq, _ := strconv.ParseInt(attrN(it["seq"]), 10, 64)
		seqs[i] = seq
		if t := attrS(it["type"]); t == "run.completed" || t == "run.failed" {
			terminal = true
		}
		records = append(records, p.record(it))
	}
	what := fmt.Sprintf("run %s seq %d..%d", k.run, seqs[0], seqs[len(seqs)-1])
	failed, err := p.D.Send(ctx, records, what)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && len(failed) == 0 {
		m.delivered, m.attempts = seqs[len(seqs)-1], 0
		m.terminal = terminal && !more
		return more, nil
	}
	m.attempts++
	why := fmt.Sprintf("%d BatchItemFailures %v", len(failed), failed)
	if err != nil {
		why = err.Error()
	} else {
		// As the event source mapping does: the records before the first
		// failed one are checkpointed, the retry starts at that one.
		first := len(records)
		for i, r := range records {
			if slices.Contains(failed, r.Change.SequenceNumber) {
				first = min(first, i)
			}
		}
		if first > 0 && first < len(records) {
			m.delivered = seqs[first-1]
		}
	}
	if m.attempts >= maxAttempts {
		// As the event source mapping does after MaximumRetryAttempts: the
		// batch is dropped (the ledger still holds the lines).
		fmt.Fprintf(p.D.ErrLog, "stream: %s: %s; giving up after %d attempts\n", what, why, m.attempts)
		m.delivered, m.attempts = seqs[len(seqs)-1], 0
		return more, nil
	}
	fmt.Fprintf(p.D.ErrLog, "stream: %s: %s (attempt %d of %d)\n", what, why, m.attempts, maxAttempts)
	return false, nil
}

// record is one INSERT record as the event source mapping sends it.
func (p *Pump) record(item map[string]types.AttributeValue) events.DynamoDBEventRecord {
	p.seqNum++
	img := map[string]events.DynamoDBAttributeValue{}
	size := 0
	for k, v := range item {
		img[k] = eventAttr(v)
		size += len(k) + attrSize(v)
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	return events.DynamoDBEventRecord{
		EventID:      hex.EncodeToString(id[:]),
		EventName:    "INSERT",
		EventVersion: "1.1",
		EventSource:  "aws:dynamodb",
		AWSRegion:    p.Region,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now().Truncate(time.Second)},
			Keys:                        map[string]events.DynamoDBAttributeValue{"PK": img["PK"], "SK": img["SK"]},
			NewImage:                    img,
			SequenceNumber:              fmt.Sprintf("%d%020d", 44, p.seqNum),
			SizeBytes:                   int64(size),
			StreamViewType:              "NEW_IMAGE",
		},
		EventSourceArn: p.arn,
	}
}

func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	}
	return 1
}

func attrS(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func attrN(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}
