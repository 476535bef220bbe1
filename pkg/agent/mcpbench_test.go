package agent_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

// searchesModel answers a conversation without tool results with n searches
// of the matter (each its own query, so each is its own effect), and
// anything after them with "Done.": an in-process model, so a run's time is
// the brain's, the store's and the tools'.
type searchesModel struct {
	n      int
	matter string
	seq    atomic.Int64
}

func (m *searchesModel) Converse(_ context.Context, in *bedrockruntime.ConverseInput, _ func(string)) (*bedrockruntime.ConverseOutput, error) {
	usage := &types.TokenUsage{InputTokens: aws.Int32(900), OutputTokens: aws.Int32(40), TotalTokens: aws.Int32(940)}
	if len(in.Messages) > 1 || m.n == 0 {
		return &bedrockruntime.ConverseOutput{StopReason: types.StopReasonEndTurn, Usage: usage,
			Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
				Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Done."}}}}}, nil
	}
	var blocks []types.ContentBlock
	for range m.n {
		q := m.seq.Add(1)
		blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(fmt.Sprintf("t%d", q)),
			Name:  aws.String("search_matter_documents"),
			Input: document.NewLazyDocument(map[string]any{"matter_id": m.matter, "query": fmt.Sprintf("deposition %d", q)})}})
	}
	return &bedrockruntime.ConverseOutput{StopReason: types.StopReasonToolUse, Usage: usage,
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant, Content: blocks}}}, nil
}

// mcpBench is a brain whose tools are the reference tools on their MCP
// server (pkg/tools/mcpserver over loopback, reached through pkg/mcp), over
// minidyn. Each measured pair of runs gets a table of its own: minidyn copies
// a table's items on every operation, so a table that grew over the
// benchmark would make every round trip slower than the last.
type mcpBench struct {
	ep         *dynamotest.Endpoint
	keys       *anchor.Keyring
	serverURL  string
	set        []agent.Tool
	firm, user string
	matter     string
}

func newMCPBench(b *testing.B) *mcpBench {
	ep := dynamotest.Minidyn(b)
	table := dynamotest.NewTable(b, ep)
	key, _ := anchor.NewHMAC([]byte("mcp-bench-ledger-head-key-32-byte"))
	keys := anchor.NewKeyring(key)
	// The server's effects are writes of the firm's system; searches write
	// nothing.
	srv, err := mcpserver.New(tools.Reference(dynamo.New(ep.Client, table), nil), mcpserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(mcpserver.Handler(srv))
	b.Cleanup(hs.Close)
	m := &mcpBench{ep: ep, keys: keys, serverURL: hs.URL + "/mcp", firm: uuid.NewString(), user: uuid.NewString(), matter: uuid.NewString()}
	doc, err := catalog.OnServer(catalog.Server{Name: "reference", Kind: catalog.TargetMCP, URL: m.serverURL, Auth: catalog.Auth{Kind: catalog.AuthNone}})
	if err != nil {
		b.Fatal(err)
	}
	cat, _ := catalog.Parse(doc)
	target, err := mcp.New(mcp.Config{Name: "reference", URL: m.serverURL, Auth: mcp.Auth{Kind: mcp.AuthNone}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { target.Close() })
	for _, name := range cat.Names() {
		m.set = append(m.set, agent.Tool{Tool: cat.Tools[name], System: target, Server: "reference"})
	}
	return m
}

// brain is a brain on a new table with model, sealing runs under keys
// (nil: in the clear).
func (m *mcpBench) brain(b *testing.B, table string, model agent.Converser, keys seal.Keyring) *agent.Brain {
	policy, _ := toolpolicy.Embedded()
	prices, _ := pricing.Embedded()
	budget := int64(1_000_000 * 1_000_000_000) // a million dollars: the budget is not what is measured
	brain, err := agent.New(dynamo.New(m.ep.Client, table, dynamo.WithHeadSigner(m.keys)), model, policy, prices, failure.NewLogger(nil),
		agent.Config{ModelID: testModel, FirmBudget: &budget, Keys: keys}, m.set, agent.MatterAssistant)
	if err != nil {
		b.Fatal(err)
	}
	return brain
}

func (m *mcpBench) run(b *testing.B, brain *agent.Brain) {
	inv := contracts.AgentInvoke{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
		Meta:    contracts.InvokeMeta{RunID: uuid.NewString(), FirmID: m.firm, UserID: m.user, MatterID: m.matter},
		History: []contracts.HistoryMessage{}, CounselMessage: "Search the depositions."}
	res, err := brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "10.00"})
	if err != nil || res.State.Status != "completed" {
		b.Fatalf("run %+v %v", res.State, err)
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGovernedMCPCall: a governed call of a read tool on its MCP server
// beside the same call made directly with the SDK. A run of 2·perRun
// searches and one of perRun (the same two model calls) are timed in turn;
// the difference, per search, is what governing one call costs: its
// latency (median and p99 of the runs' per-call share), its DynamoDB round
// trips, and the process's CPU (the in-process DynamoDB and MCP server
// included: BENCHMARKS.md attributes Warrant's own share with a profile).
func BenchmarkGovernedMCPCall(b *testing.B) {
	const perRun = 8
	m := newMCPBench(b)
	b.Run("sdk-direct", func(b *testing.B) {
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		ctx := context.Background()
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: m.serverURL}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		run := uuid.NewString()
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_matter_documents",
				Arguments: map[string]any{"matter_id": m.matter, "query": "deposition"},
				Meta:      sdk.Meta{agent.MetaEffectRef: uuid.NewString(), agent.MetaFirmID: m.firm, agent.MetaRunID: run, agent.MetaMatterID: m.matter}})
			if err != nil || res.IsError {
				b.Fatalf("%+v %v", res, err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("governed", func(b *testing.B) { m.governed(b, perRun, nil) })
	// The same with every run sealed under its own data key (issue 26), on
	// a local keyring: the sealing's CPU, and the key requests a run makes
	// (on AWS each is a KMS request).
	b.Run("governed-sealed", func(b *testing.B) {
		ring, err := seal.NewLocalKeyring([]byte("mcp-bench-data-master-key-32byte"))
		if err != nil {
			b.Fatal(err)
		}
		keys := &countingKeys{Keyring: ring}
		m.governed(b, perRun, keys)
		runs := float64(keys.runs.Load())
		b.ReportMetric(float64(keys.generated.Load())/runs, "data-keys-generated/run")
		b.ReportMetric(float64(keys.opened.Load())/runs, "data-keys-opened/run")
	})
}

// countingKeys counts the data keys a keyring makes and opens (on AWS: the
// GenerateDataKey and Decrypt requests).
type countingKeys struct {
	seal.Keyring
	generated, opened, runs atomic.Int64
}

func (k *countingKeys) NewRunKey(ctx context.Context, firm, run string) (*seal.RunKey, []byte, error) {
	k.generated.Add(1)
	k.runs.Add(1)
	return k.Keyring.NewRunKey(ctx, firm, run)
}

func (k *countingKeys) OpenRunKey(ctx context.Context, firm, run string, wrapped []byte) (*seal.RunKey, error) {
	k.opened.Add(1)
	return k.Keyring.OpenRunKey(ctx, firm, run, wrapped)
}

// governed times a run of 2·perRun searches against one of perRun, sealed
// under keys (nil: in the clear); see BenchmarkGovernedMCPCall.
func (m *mcpBench) governed(b *testing.B, perRun int, keys seal.Keyring) {
	{
		// Both runs make the same two model calls; the governed one makes
		// perRun more searches.
		more, fewer := &searchesModel{n: 2 * perRun, matter: m.matter}, &searchesModel{n: perRun, matter: m.matter}
		m.run(b, m.brain(b, dynamotest.NewTable(b, m.ep), more, keys)) // the target's session and tool list in hand
		var withCalls, without []time.Duration
		var tripsWith, tripsWithout, cpuWith, cpuWithout int64
		for b.Loop() {
			table := dynamotest.NewTable(b, m.ep)
			governed, baseline := m.brain(b, table, more, keys), m.brain(b, table, fewer, keys)
			t0, c0, r0 := time.Now(), cpuNow(), m.ep.Counter.Count()
			m.run(b, governed)
			withCalls = append(withCalls, time.Since(t0))
			cpuWith += int64(cpuNow() - c0)
			tripsWith += int64(m.ep.Counter.Count() - r0)
			t0, c0, r0 = time.Now(), cpuNow(), m.ep.Counter.Count()
			m.run(b, baseline)
			without = append(without, time.Since(t0))
			cpuWithout += int64(cpuNow() - c0)
			tripsWithout += int64(m.ep.Counter.Count() - r0)
		}
		n := int64(len(withCalls))
		base := median(without)
		perCall := make([]time.Duration, len(withCalls))
		for i, d := range withCalls {
			perCall[i] = (d - base) / time.Duration(perRun)
		}
		report(b, perCall)
		b.ReportMetric(float64(tripsWith-tripsWithout)/float64(n*int64(perRun)), "dynamodb-round-trips/call")
		b.ReportMetric(float64(cpuWith-cpuWithout)/float64(n*int64(perRun))/1e3, "process-cpu-µs/call")
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// report puts the median and p99 of one call's latency beside ns/op.
func report(b *testing.B, lat []time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	if len(s) == 0 {
		return
	}
	b.ReportMetric(float64(s[len(s)/2].Microseconds()), "median-µs/call")
	b.ReportMetric(float64(s[min(len(s)-1, len(s)*99/100)].Microseconds()), "p99-µs/call")
}
