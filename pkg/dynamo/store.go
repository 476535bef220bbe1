package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Store is the DynamoDB store of runs, ledgers, warrants and effect claims.
// It is safe for concurrent use.
type Store struct {
	client *dynamodb.Client
	table  string
	now    func() time.Time
	signer HeadSigner
	// attested: a checkpoint leaves its log's head due until the sweeper
	// settles it, its attestations kept (WithAttestations).
	attested bool
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for timestamps and warrant expiry.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithAttestations is the sweeper's when the firm configured a
// time-stamping authority or witnesses: a checkpoint that covers its whole
// log leaves the head due (GSI2 LOGDUE) until CheckpointSettled, which the
// sweeper calls once the checkpoint holds its timestamp token
// (PutCheckpointTimestamp) and every witness's cosignature
// (AddCheckpointCosignatures), so a sweep that could not reach the TSA or a
// witness visits the log again, although it did not grow.
func WithAttestations() Option { return func(s *Store) { s.attested = true } }

// New returns a store on table.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	s := &Store{client: client, table: table, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Sort key prefixes. Every item of a run lives in the run's partition
// FIRM#<firm>#RUN#<run>, so a key built from one firm's id can never reach
// another firm's items: scoping is by construction, not by a filter.
const (
	skRun      = "RUN"
	skEvt      = "EVT#"
	skApr      = "APR#"
	skEff      = "EFF#"
	skOut      = "OUT#"
	maxSeq     = 999_999_999_999 // 12 digits
	maxTxItems = 100             // TransactWriteItems limit
)

func runPK(firm, run string) string { return RunKey(firm, run) }

// RunKey is the partition key of every item of a run: FIRM#<firm>#RUN#<run>.
// The firm is in the key, so one firm's ids cannot address another's items.
func RunKey(firm, run string) string { return "FIRM#" + firm + "#RUN#" + run }

// ParseRunKey is the package's ParseRunKey, for consumers that reach the
// store through an interface (the stream reducer reads keys off records).
func (*Store) ParseRunKey(pk string) (firm, run string, ok bool) { return ParseRunKey(pk) }

// ParseRunKey splits a run's partition key into its firm and run ids. ok is
// false for any other key (a firm's warrant index key, a malformed or
// non-canonical id): nothing of a run lives there.
func ParseRunKey(pk string) (firm, run string, ok bool) {
	rest, found := strings.CutPrefix(pk, "FIRM#")
	if !found {
		return "", "", false
	}
	firm, run, found = strings.Cut(rest, "#RUN#")
	if !found || !isUUID(firm) || !isUUID(run) {
		return "", "", false
	}
	return firm, run, true
}
func pendingPK(firm string) string { return "FIRM#" + firm + "#WARRANTS#pending" }
func evtSK(seq int64) string       { return fmt.Sprintf("%s%012d", skEvt, seq) }
func aprSK(id string) string       { return skApr + id }

// effSK is the claim of one attempt at an effect: EFF#<tool>#<hash> for the
// first, EFF#<tool>#<hash>#<attempt, 4 digits> for a retry, so a run's
// attempts at one call sort in attempt order under one prefix.
func effSK(k warrant.EffectKey) string {
	if k.Attempt <= 1 {
		return skEff + k.ToolName + "#" + k.InputSHA256
	}
	return fmt.Sprintf("%s%s#%s#%04d", skEff, k.ToolName, k.InputSHA256, k.Attempt)
}

// maxAttempt keeps attempt numbers within effSK's four digits.
const maxAttempt = 9999

func outSK(ref string) string { return skOut + ref }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(pk), AttrSK: str(sk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// timeLayout is fixed-width UTC with nanoseconds, so string order is time
// order: conditions like expires_at > :now compare strings.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (s *Store) nowUTC() time.Time { return s.now().UTC() }

// isUUID reports whether id is a canonical lowercase UUID. Ids go into keys;
// accepting only UUIDs means no id can smuggle a "#" and address another
// firm's or run's partition.
func isUUID(id string) bool { return contracts.CheckUUID("", id) == nil }

func checkIDs(op string, ids ...string) error {
	for i := 0; i+1 < len(ids); i += 2 {
		if !isUUID(ids[i+1]) {
			return invalid(op, "%s must be a canonical lowercase UUID, got %q", ids[i], ids[i+1])
		}
	}
	return nil
}

// idsOK is checkIDs for reads: an id that is not a UUID names nothing.
func idsOK(ids ...string) bool {
	for _, id := range ids {
		if !isUUID(id) {
			return false
		}
	}
	return true
}

func checkKey(op string, k warrant.EffectKey) error {
	if k.Attempt < 0 || k.Attempt > maxAttempt {
		return invalid(op, "attempt %d is out of range", k.Attempt)
	}
	return checkTool(op, k.ToolName, k.InputSHA256)
}

func checkTool(op, tool, hash string) error {
	if tool == "" || strings.Contains(tool, "#") {
		return invalid(op, "tool name %q must be non-empty without '#'", tool)
	}
	if !contracts.IsHash(hash) {
		return invalid(op, "input_sha256 must be a lowercase hex SHA-256 digest")
	}
	return nil
}

// checkLines parses every line and checks it belongs to this run's partition
// at its own seq. The store only ever persists a self-consistent, hashed line
// of the run it is filed under.
func checkLines(op, firm, run string, lines []contracts.Line) ([]contracts.Line, error) {
	out := make([]contracts.Line, len(lines))
	for i, l := range lines {
		if len(l.Raw) > contracts.MaxLineBytes {
			// What the run would record is too large to record (a model's
			// turn, a tool's input): said as such, not as a store fault.
			return nil, failure.Wrap(failure.KindPayloadTooLarge, "too large to record: a ledger line holds at most 396 KiB",
				fail(warrant.ErrTooLarge, nil, "%s: line %d is %d bytes, at most %d", op, i, len(l.Raw), contracts.MaxLineBytes))
		}
		if len(l.Raw) == 0 || !utf8.Valid(l.Raw) {
			return nil, invalid(op, "line %d: raw bytes must be non-empty UTF-8 of at most %d bytes", i, contracts.MaxLineBytes)
		}
		p, err := contracts.ParseEventLine(l.Raw)
		if err != nil {
			return nil, invalid(op, "line %d: %v", i, err)
		}
		if p.Seq != l.Seq || p.Seq > maxSeq {
			return nil, invalid(op, "line %d: seq %d does not match its bytes (seq %d) or exceeds 12 digits", i, l.Seq, p.Seq)
		}
		if p.FirmID != firm || p.RunID != run {
			return nil, invalid(op, "line seq %d belongs to firm %s run %s, not this run", p.Seq, p.FirmID, p.RunID)
		}
		if i > 0 && p.Seq != out[i-1].Seq+1 {
			return nil, invalid(op, "lines must have consecutive seqs, got %d after %d", p.Seq, out[i-1].Seq)
		}
		out[i] = p
	}
	return out, nil
}

// linePut is the conditional put of one ledger line.
func (s *Store) linePut(pk string, l contracts.Line) *types.Put {
	return &types.Put{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			AttrPK:       str(pk),
			AttrSK:       str(evtSK(l.Seq)),
			"seq":        num(l.Seq),
			"type":       str(string(l.Type)),
			"line":       str(string(l.Raw)),
			"created_at": str(l.CreatedAt),
		},
		// attribute_not_exists(SK) on EVT#<seq>: the put succeeds only if no
		// item has this key, so exactly one writer ever holds a seq and a
		// stored line is never overwritten. Two racing writers cannot both
		// extend the chain from the same head.
		ConditionExpression:                 aws.String("attribute_not_exists(#SK)"),
		ExpressionAttributeNames:            map[string]string{"#SK": AttrSK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

var namePattern = regexp.MustCompile(`#[A-Za-z0-9_]+`)

// names builds ExpressionAttributeNames from the #placeholders used in the
// expressions: every attribute is referenced as #<its name>, which sidesteps
// DynamoDB's reserved words (status, state, owner...) and never declares an
// unused name.
func names(exprs ...string) map[string]string {
	out := map[string]string{}
	for _, e := range exprs {
		for _, m := range exprNames(e) {
			out[m] = m[1:]
		}
	}
	return out
}

// exprNames returns the #names in one expression. The store's expressions
// are built from a fixed set of attribute names, so they are few and each is
// scanned once per process.
func exprNames(e string) []string {
	if v, ok := exprNameCache.Load(e); ok {
		return v.([]string)
	}
	m := namePattern.FindAllString(e, -1)
	if exprNameCacheSize.Add(1) <= maxCachedExprs {
		exprNameCache.Store(e, m)
	}
	return m
}

const maxCachedExprs = 4096

var (
	exprNameCache     sync.Map // expression -> []string
	exprNameCacheSize atomic.Int64
)

// update builds an UpdateExpression of SET and REMOVE clauses. Values are
// named :set_<attr>, apart from condition values.
type update struct {
	sets, removes []string
	values        map[string]types.AttributeValue
}

func newUpdate() *update { return &update{values: map[string]types.AttributeValue{}} }

func (u *update) set(attr string, v types.AttributeValue) *update {
	ph := ":set_" + attr
	u.sets = append(u.sets, "#"+attr+" = "+ph)
	u.values[ph] = v
	return u
}

// setExpr sets attr to an expression (its #names and :values its own).
func (u *update) setExpr(attr, expr string, values map[string]types.AttributeValue) *update {
	u.sets = append(u.sets, "#"+attr+" = "+expr)
	for k, v := range values {
		u.values[k] = v
	}
	return u
}

// setStr sets a string, or removes the attribute when s is empty (DynamoDB
// items carry no empty optional strings here).
func (u *update) setStr(attr, s string) *update {
	if s == "" {
		return u.remove(attr)
	}
	return u.set(attr, str(s))
}

func (u *update) remove(attr string) *update {
	u.removes = append(u.removes, "#"+attr)
	return u
}

func (u *update) expr() string {
	var b strings.Builder
	if len(u.sets) > 0 {
		b.WriteString("SET " + strings.Join(u.sets, ", "))
	}
	if len(u.removes) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("REMOVE " + strings.Join(u.removes, ", "))
	}
	return b.String()
}

// txUpdate is a conditional Update in a transaction, asking for the item's
// old image when the condition fails (so the error can say why without a
// second read, where the endpoint returns it).
func (s *Store) txUpdate(k map[string]types.AttributeValue, u *update, cond string, condValues map[string]types.AttributeValue) *types.Update {
	values := map[string]types.AttributeValue{}
	for k, v := range u.values {
		values[k] = v
	}
	for k, v := range condValues {
		values[k] = v
	}
	ue := u.expr()
	return &types.Update{
		TableName:                           aws.String(s.table),
		Key:                                 k,
		UpdateExpression:                    aws.String(ue),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names(ue, cond),
		ExpressionAttributeValues:           nilIfEmpty(values),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

func nilIfEmpty(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Conflict retries: a transaction canceled only because another transaction
// was touching the same items (TransactionConflict), or a single write
// rejected with TransactionConflictException, wrote nothing, so running it
// again is safe. Real DynamoDB does this under contention; the local
// endpoints never do.
const conflictAttempts = 6

func isPureConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		conflict := false
		for _, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "", "None":
			case "TransactionConflict":
				conflict = true
			default:
				return false
			}
		}
		return conflict
	}
	var tc *types.TransactionConflictException
	return errors.As(err, &tc)
}

// withConflictRetry runs fn, one DynamoDB write, retrying pure conflicts.
// Every write goes through it, so the error it returns is classified here:
// callers that turn a failed condition into a sentinel error keep the SDK
// error, with its kind, as the cause.
func (s *Store) withConflictRetry(ctx context.Context, fn func() error) error {
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == conflictAttempts || !isPureConflict(err) {
			return classify(err)
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return classify(err)
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// transact runs one TransactWriteItems. The SDK fills ClientRequestToken, so
// its own retries of a transaction that did commit are answered as success by
// DynamoDB instead of failing their conditions.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) error {
	if len(items) > maxTxItems {
		return fmt.Errorf("dynamo: transaction of %d items exceeds the limit of %d", len(items), maxTxItems)
	}
	return s.withConflictRetry(ctx, func() error {
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		return err
	})
}

// canceled is the first item of a canceled transaction whose condition failed.
type canceled struct {
	index int
	item  map[string]types.AttributeValue // old image, when the endpoint returned it
}

// firstFailedCondition finds the failed condition of a canceled transaction.
// DynamoDB and moto give a reason per item ("None" for the ones that were
// fine); minidyn stops at the first failing item and reports only that one.
// Taking the first ConditionalCheckFailed in item order gives the same answer
// on both as long as each operation orders its items most informative first.
// A failed condition wins over a TransactionConflict on another item: the
// condition is false now, retrying would not change it.
func firstFailedCondition(err error) (canceled, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return canceled{}, false
	}
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return canceled{index: i, item: r.Item}, true
		}
	}
	return canceled{}, false
}

// updateItem sends a transaction's Update on its own (one item, one round
// trip), retrying DynamoDB's transient conflicts; a failed condition
// returns the item as it was.
func (s *Store) updateItem(ctx context.Context, upd *types.Update) error {
	return s.withConflictRetry(ctx, func() error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: upd.TableName, Key: upd.Key, UpdateExpression: upd.UpdateExpression,
			ConditionExpression: upd.ConditionExpression, ExpressionAttributeNames: upd.ExpressionAttributeNames,
			ExpressionAttributeValues:           upd.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
}

// conditionFailed unwraps a single-item ConditionalCheckFailedException.
func conditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// getItem is a consistent base-table read: every read that authorizes
// anything sees the latest committed write. Missing is a nil map.
func (s *Store) getItem(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, classify(err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// oldImage returns the item a failed condition saw: from ALL_OLD when the
// endpoint returned it, else from a consistent read (nil when missing).
func (s *Store) oldImage(ctx context.Context, item map[string]types.AttributeValue, pk, sk string) (map[string]types.AttributeValue, error) {
	if len(item) > 0 {
		return item, nil
	}
	return s.getItem(ctx, pk, sk)
}

// wrap is how errors leave the store: it names the operation and classifies
// an SDK error (see classify), so pkg/failure needs no DynamoDB knowledge.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("dynamo: %s: %w", op, classify(err))
}
