package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

// StreamTail is the Feed for an endpoint with DynamoDB Streams (moto,
// DynamoDB Local, a real table): it reads the table's stream from LATEST, as
// the template's event source mapping does (StartingPosition: LATEST), keeps
// the records the mapping's filter keeps (INSERT of an EVT# item) and
// delivers them one batch per run in seq order. A shard's next records are
// read only once its previous ones are delivered (or given up on), so order
// holds per shard as it does on Lambda.
type StreamTail struct {
	Client    *dynamodbstreams.Client
	StreamARN string
	BatchSize int
	D         *Deliverer

	mu     sync.Mutex
	shards map[string]*shard
	kick   chan struct{}
}

type shard struct {
	iterator *string // nil: the shard is closed and read to its end
	pending  []events.DynamoDBEventRecord
	attempts map[string]int // failed deliveries by run partition
}

// NewStreamTail opens the stream of table on the endpoint, or says why it
// cannot (no stream, or no Streams API there: minidyn).
func NewStreamTail(ctx context.Context, ddb *dynamodb.Client, streams *dynamodbstreams.Client, table string, batchSize int, d *Deliverer) (*StreamTail, error) {
	out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, err
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return nil, errors.New("the table reports no stream")
	}
	return OpenStreamTail(ctx, streams, arn, batchSize, d)
}

// OpenStreamTail opens the stream arn from LATEST: all its calls are the
// Streams API's (DescribeStream, GetShardIterator, GetRecords), those the
// event source mapping makes with the function's role.
func OpenStreamTail(ctx context.Context, streams *dynamodbstreams.Client, arn string, batchSize int, d *Deliverer) (*StreamTail, error) {
	t := &StreamTail{Client: streams, StreamARN: arn, BatchSize: max(batchSize, 1), D: d,
		shards: map[string]*shard{}, kick: make(chan struct{}, 1)}
	if err := t.discover(ctx, st.ShardIteratorTypeLatest); err != nil {
		return nil, err
	}
	return t, nil
}

// discover adds the shards not seen yet: at start from LATEST, later (new
// child shards) from TRIM_HORIZON so nothing written to them is missed.
func (t *StreamTail) discover(ctx context.Context, from st.ShardIteratorType) error {
	var start *string
	for {
		out, err := t.Client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(t.StreamARN), ExclusiveStartShardId: start})
		if err != nil {
			return fmt.Errorf("describe stream: %w", err)
		}
		for _, s := range out.StreamDescription.Shards {
			id := aws.ToString(s.ShardId)
			t.mu.Lock()
			_, seen := t.shards[id]
			t.mu.Unlock()
			if seen {
				continue
			}
			closed := s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil
			if from == st.ShardIteratorTypeLatest && closed {
				continue // LATEST: a closed shard has nothing new
			}
			it, err := t.Client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(t.StreamARN), ShardId: s.ShardId, ShardIteratorType: from})
			if err != nil {
				return fmt.Errorf("shard iterator %s: %w", id, err)
			}
			t.mu.Lock()
			t.shards[id] = &shard{iterator: it.ShardIterator, attempts: map[string]int{}}
			t.mu.Unlock()
		}
		start = out.StreamDescription.LastEvaluatedShardId
		if start == nil {
			return nil
		}
	}
}

// Track is a no-op: the stream sees every write.
func (t *StreamTail) Track(string, string) { t.Kick() }

// Kick asks for a round now.
func (t *StreamTail) Kick() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Run reads and delivers until ctx ends.
func (t *StreamTail) Run(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastDiscover := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		case <-tick.C:
		}
		if time.Since(lastDiscover) > 5*time.Second {
			if err := t.discover(ctx, st.ShardIteratorTypeTrimHorizon); err != nil && ctx.Err() == nil {
				fmt.Fprintf(t.D.ErrLog, "stream: %v\n", err)
			}
			lastDiscover = time.Now()
		}
		t.mu.Lock()
		ids := make([]string, 0, len(t.shards))
		for id := range t.shards {
			ids = append(ids, id)
		}
		t.mu.Unlock()
		sort.Strings(ids)
		for _, id := range ids {
			if ctx.Err() != nil {
				return
			}
			if err := t.shardRound(ctx, id); err != nil && ctx.Err() == nil {
				fmt.Fprintf(t.D.ErrLog, "stream: shard %s: %v\n", id, err)
			}
		}
	}
}

func (t *StreamTail) shardRound(ctx context.Context, id string) error {
	t.mu.Lock()
	sh := t.shards[id]
	t.mu.Unlock()
	if len(sh.pending) == 0 {
		if sh.iterator == nil {
			t.mu.Lock()
			delete(t.shards, id) // closed and drained
			t.mu.Unlock()
			return nil
		}
		out, err := t.Client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: sh.iterator, Limit: aws.Int32(1000)})
		if err != nil {
			return fmt.Errorf("get records: %w", err)
		}
		sh.iterator = out.NextShardIterator
		for _, r := range out.Records {
			if rec, ok := toEventRecord(r, t.StreamARN); ok {
				sh.pending = append(sh.pending, rec)
			}
		}
	}
	if len(sh.pending) == 0 {
		return nil
	}
	// One batch per run, in seq order, at most BatchSize records each.
	byRun := map[string][]events.DynamoDBEventRecord{}
	var order []string
	for _, r := range sh.pending {
		pk := r.Change.Keys["PK"].String()
		if _, ok := byRun[pk]; !ok {
			order = append(order, pk)
		}
		byRun[pk] = append(byRun[pk], r)
	}
	var keep []events.DynamoDBEventRecord
	for _, pk := range order {
		recs := byRun[pk]
		sort.SliceStable(recs, func(i, j int) bool { return seqOf(recs[i]) < seqOf(recs[j]) })
		for len(recs) > 0 {
			n := min(len(recs), t.BatchSize)
			batch := recs[:n]
			what := fmt.Sprintf("%s seq %d..%d", runOfPK(pk), seqOf(batch[0]), seqOf(batch[n-1]))
			failed, err := t.D.Send(ctx, batch, what)
			if err == nil && len(failed) == 0 {
				sh.attempts[pk] = 0
				recs = recs[n:]
				continue
			}
			sh.attempts[pk]++
			why := fmt.Sprintf("%d BatchItemFailures %v", len(failed), failed)
			first := 0
			if err != nil {
				why = err.Error()
			} else {
				first = n
				for i, r := range batch {
					if slices.Contains(failed, r.Change.SequenceNumber) {
						first = min(first, i)
					}
				}
			}
			if sh.attempts[pk] >= maxAttempts {
				fmt.Fprintf(t.D.ErrLog, "stream: %s: %s; giving up after %d attempts\n", what, why, sh.attempts[pk])
				sh.attempts[pk] = 0
				recs = recs[n:]
				continue
			}
			fmt.Fprintf(t.D.ErrLog, "stream: %s: %s (attempt %d of %d)\n", what, why, sh.attempts[pk], maxAttempts)
			keep = append(keep, recs[first:]...) // retried next round, from the first failed record
			break
		}
	}
	sh.pending = keep
	return nil
}

func seqOf(r events.DynamoDBEventRecord) int64 {
	n, _ := strconv.ParseInt(r.Change.NewImage["seq"].Number(), 10, 64)
	return n
}

func runOfPK(pk string) string {
	if _, run, ok := dynamo.ParseRunKey(pk); ok {
		return "run " + run
	}
	return pk
}

// toEventRecord renders a Streams API record as the event source mapping
// does, keeping what the template's filter keeps: INSERTs of EVT# items.
func toEventRecord(r st.Record, arn string) (events.DynamoDBEventRecord, bool) {
	d := r.Dynamodb
	if r.EventName != st.OperationTypeInsert || d == nil {
		return events.DynamoDBEventRecord{}, false
	}
	sk, ok := d.Keys["SK"].(*st.AttributeValueMemberS)
	if !ok || !strings.HasPrefix(sk.Value, "EVT#") {
		return events.DynamoDBEventRecord{}, false
	}
	rec := events.DynamoDBEventRecord{
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSource:    aws.ToString(r.EventSource),
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{
			Keys:           eventImage(fromStreamsImage(d.Keys)),
			NewImage:       eventImage(fromStreamsImage(d.NewImage)),
			SequenceNumber: aws.ToString(d.SequenceNumber),
			SizeBytes:      aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		},
	}
	if d.ApproximateCreationDateTime != nil {
		rec.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	if rec.EventSource == "" {
		rec.EventSource = "aws:dynamodb"
	}
	return rec, true
}
