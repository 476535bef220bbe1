package dynamotest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

// Forgery is what RechainLedger wrote.
type Forgery struct {
	Lines []contracts.Line // the rewritten ledger, every line valid and chained
}

// RechainLedger rewrites a run's ledger as a writer with table access but
// without the ledger key could: edit changes each event in place, then every
// line is re-encoded at its seq and time and re-chained, so each line's own
// hash and link verify, and the items are overwritten behind the store's
// back. It is for tests that prove such a ledger is refused; it never moves
// the run's signed head (see SetHead).
func RechainLedger(t testing.TB, client *dynamodb.Client, table, firm, run string, edit func(contracts.Event)) Forgery {
	t.Helper()
	return RechainSealedLedger(t, client, table, firm, run, nil, edit)
}

// RunKey opens and seals a run's content (*seal.RunKey is one).
type RunKey interface {
	contracts.Opener
	contracts.Sealer
}

// RechainSealedLedger is RechainLedger for a forger who also holds the
// run's data key (key; nil: none): each sealed line is opened, edited and
// sealed again. Without the ledger key the forgery still cannot sign the
// run's head.
func RechainSealedLedger(t testing.TB, client *dynamodb.Client, table, firm, run string, key RunKey, edit func(contracts.Event)) Forgery {
	t.Helper()
	ctx := context.Background()
	pk := dynamo.RunKey(firm, run)
	out, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :evt)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk), ":evt": s("EVT#")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("forge: read ledger: %v", err)
	}
	chain := contracts.NewChain(run, firm)
	var f Forgery
	for _, item := range out.Items {
		raw, _ := item["line"].(*types.AttributeValueMemberS)
		if raw == nil {
			t.Fatal("forge: a ledger item without its line")
		}
		l, err := contracts.ParseEventLine([]byte(raw.Value))
		if err != nil {
			t.Fatalf("forge: parse: %v", err)
		}
		chain.Sealer = nil
		if l.Sealed {
			if key == nil {
				t.Fatalf("forge: seq %d is sealed and the forger has no data key", l.Seq)
			}
			if l, err = contracts.OpenLine(l, key); err != nil {
				t.Fatalf("forge: open seq %d: %v", l.Seq, err)
			}
			chain.Sealer = key
		}
		edit(l.Event)
		at, _ := time.Parse(contracts.TimeLayout, l.CreatedAt)
		chain.Now = func() time.Time { return at }
		forged, err := chain.Append(l.Event)
		if err != nil {
			t.Fatalf("forge: re-chain seq %d: %v", l.Seq, err)
		}
		item["line"], item["type"] = s(string(forged.Raw)), s(string(forged.Type))
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatalf("forge: put: %v", err)
		}
		f.Lines = append(f.Lines, forged)
	}
	return f
}

// SetHead moves a run item's head to seq and hash and leaves its MAC as it
// was: what a forger can do, who cannot compute a MAC.
func SetHead(t testing.TB, client *dynamodb.Client, table, firm, run string, seq int64, hash string) {
	t.Helper()
	_, err := client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:              map[string]types.AttributeValue{"PK": s(dynamo.RunKey(firm, run)), "SK": s("RUN")},
		UpdateExpression: aws.String("SET head_seq = :q, head_hash = :h"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":q": &types.AttributeValueMemberN{Value: fmt.Sprint(seq)}, ":h": s(hash)}})
	if err != nil {
		t.Fatalf("forge: set head: %v", err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// AppendUnsigned appends events after a run's last stored line as a table
// writer without the ledger key could: each line is well formed and chained
// to the one before, but the run's signed head is left where it was (a
// forger cannot sign it).
func AppendUnsigned(t testing.TB, client *dynamodb.Client, table, firm, run string, events ...contracts.Event) []contracts.Line {
	t.Helper()
	ctx := context.Background()
	pk := dynamo.RunKey(firm, run)
	out, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :evt)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk), ":evt": s("EVT#")},
		ScanIndexForward:          aws.Bool(false), Limit: aws.Int32(1), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("forge: read the last line: %v (%d items)", err, len(out.Items))
	}
	raw, _ := out.Items[0]["line"].(*types.AttributeValueMemberS)
	last, err := contracts.ParseEventLine([]byte(raw.Value))
	if err != nil {
		t.Fatalf("forge: parse the last line: %v", err)
	}
	chain := contracts.ChainAfter(last)
	var lines []contracts.Line
	for _, e := range events {
		l, err := chain.Append(e)
		if err != nil {
			t.Fatalf("forge: encode %T: %v", e, err)
		}
		_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"PK": s(pk), "SK": s(fmt.Sprintf("EVT#%012d", l.Seq)), "seq": &types.AttributeValueMemberN{Value: fmt.Sprint(l.Seq)},
			"type": s(string(l.Type)), "line": s(string(l.Raw)), "created_at": s(l.CreatedAt)}})
		if err != nil {
			t.Fatalf("forge: put seq %d: %v", l.Seq, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// Put writes an item behind the store's back (attribute values as strings,
// numbers as int64 or int, and bool).
func Put(t testing.TB, client *dynamodb.Client, table string, item map[string]any) {
	t.Helper()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: attrs(t, item)}); err != nil {
		t.Fatalf("forge: put: %v", err)
	}
}

// Update runs an update expression on an item behind the store's back
// (values as Put takes them).
func Update(t testing.TB, client *dynamodb.Client, table, pk, sk, expr string, names map[string]string, vals map[string]any) {
	t.Helper()
	in := &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"PK": s(pk), "SK": s(sk)},
		UpdateExpression: aws.String(expr)}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = attrs(t, vals)
	}
	if len(names) > 0 {
		in.ExpressionAttributeNames = names
	}
	if _, err := client.UpdateItem(context.Background(), in); err != nil {
		t.Fatalf("forge: update: %v", err)
	}
}

func attrs(t testing.TB, m map[string]any) map[string]types.AttributeValue {
	t.Helper()
	av := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case string:
			av[k] = s(x)
		case int64:
			av[k] = &types.AttributeValueMemberN{Value: fmt.Sprint(x)}
		case int:
			av[k] = &types.AttributeValueMemberN{Value: fmt.Sprint(x)}
		case bool:
			av[k] = &types.AttributeValueMemberBOOL{Value: x}
		default:
			t.Fatalf("forge: attribute %s: unsupported %T", k, v)
		}
	}
	return av
}
