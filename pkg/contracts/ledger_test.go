package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/seed-f6d3920e/warrant"
)

func fixedChain() *Chain {
	c := NewChain(uRun, uFirm)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	n := 0
	c.Now = func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	return c
}

// sampleEvents has one event of every type, in an order a real run could take.
func sampleEvents() []Event {
	input := json.RawMessage(`{"matter_id":"` + uMatter + `","court":"Superior Court"}`)
	h, _ := InputHash(input)
	return []Event{
		&RunStarted{AgentKey: "matter_assistant", Mode: ModeInvoke, ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			PromptVersion: "v1", SchemaVersion: SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: uMatter, UserID: uUser,
			History: []HistoryMessage{{Role: RoleUser, Text: "File the motion."}}},
		&TurnDelta{Turn: 1, Text: "I will"},
		&TurnCompleted{Turn: 1, Text: "I will file it.", StopReason: "tool_use", Content: []ContentBlock{
			{Type: BlockText, Text: "I will file it."},
			{Type: BlockToolUse, ToolUseID: "tooluse_1", Name: "file_court_document", Input: input}}},
		&ModelUsage{Turn: 1, ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Usage: Usage{InputTokens: 1200, OutputTokens: 350}, CostUSD: "0.009735"},
		&ToolRequested{Turn: 1, ToolUseID: "tooluse_1", ToolName: "file_court_document", Input: input, InputSHA256: h,
			RiskTier: "high", Action: "require_approval", Reason: "Irreversible external court filing that must not run without human approval.", MatchedPolicy: "tools.file_court_document"},
		&RunBlocked{Approval: BlockedApproval{ApprovalRequestID: uApprove, ToolUseID: "tooluse_1", ToolName: "file_court_document",
			ToolInput: input, ToolInputHash: h, RiskTier: "high", Reason: "court filing", HumanSummary: "File a motion", ExpiresAt: "2026-12-03T10:00:00.123Z"}},
		&ApprovalDecided{ApprovalRequestID: uApprove, Decision: warrant.DecisionApproved, DecidedBy: uUser, ToolInputHash: h},
		&RunReleased{ApprovalRequestID: uApprove, Decision: warrant.DecisionApproved, EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678"},
		&ToolCompleted{ToolUseID: "tooluse_1", ToolName: "file_court_document", InputSHA256: h, Status: ToolSuccess,
			EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", Result: json.RawMessage(`{"filing_id":"F-1"}`)},
		&RunCompleted{StopReason: "end_turn", FinalText: "Filed."},
		&ContentDestroyed{MatterID: uMatter, Reason: DestroyedRetention, RetentionDays: 365, RetentionSource: RetentionOfMatter,
			BackupsUntil: "2028-01-06T10:00:00.123Z"},
	}
}

func sampleLedger(t testing.TB) []Line {
	c := fixedChain()
	var lines []Line
	for _, e := range sampleEvents() {
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestLineRoundTrip(t *testing.T) {
	lines := sampleLedger(t)
	for _, l := range lines {
		got, err := ParseEventLine(l.Raw)
		if err != nil {
			t.Fatalf("seq %d %s: %v\n%s", l.Seq, l.Type, err, l.Raw)
		}
		if got.Seq != l.Seq || got.Hash != l.Hash || got.Type != l.Type {
			t.Fatalf("header differs: %+v vs %+v", got, l)
		}
		// The event survives unmarshal+marshal as the same JSON.
		a, _ := json.Marshal(l.Event)
		b, _ := json.Marshal(got.Event)
		a, _ = Canonicalize(a)
		b, _ = Canonicalize(b)
		if !bytes.Equal(a, b) {
			t.Fatalf("payload differs:\n%s\n%s", a, b)
		}
		// Stored lines are canonical.
		c, err := Canonicalize(l.Raw)
		if err != nil || !bytes.Equal(c, l.Raw) {
			t.Fatalf("line %d is not canonical", l.Seq)
		}
	}
	if lines[0].PrevHash != ZeroHash {
		t.Fatal("line 1 must chain from the zero hash")
	}
	// Re-encoding a parsed line reproduces its exact bytes and hash.
	re, err := EncodeLine(Line{Seq: lines[3].Seq, RunID: uRun, FirmID: uFirm, CreatedAt: lines[3].CreatedAt, PrevHash: lines[3].PrevHash}, lines[3].Event)
	if err != nil || !bytes.Equal(re.Raw, lines[3].Raw) {
		t.Fatalf("re-encode differs: %v", err)
	}
}

func TestParseEventLineRejects(t *testing.T) {
	good := sampleLedger(t)[4].Raw
	replace := func(old, new string) []byte { return bytes.Replace(good, []byte(old), []byte(new), 1) }
	tests := []struct {
		name    string
		line    []byte
		unknown bool
		path    string
		hash    bool
	}{
		{"unknown type", replace(`"type":"tool.requested"`, `"type":"tool.exploded"`), true, "", false},
		{"unknown schema", replace(`"schema_version":"1"`, `"schema_version":"3"`), true, "", false},
		{"tampered payload", replace(`Superior Court`, `Inferior Court`), false, "", true},
		{"unknown header field", replace(`{"created_at"`, `{"extra":1,"created_at"`), false, "extra", false},
		{"unknown payload field", replace(`"payload":{`, `"payload":{"x":1,`), false, "payload.x", false},
		{"duplicate key", replace(`{"created_at"`, `{"seq":1,"created_at"`), false, "seq", false},
		{"case variant", replace(`"seq":`, `"Seq":`), false, "Seq", false},
		{"trailing data", append(bytes.Clone(good), []byte(` {}`)...), false, "", false},
		{"bad action", replace(`"action":"require_approval"`, `"action":"maybe"`), false, "payload.action", false},
		{"bad seq", replace(`"seq":5`, `"seq":0`), false, "seq", false},
		{"missing hash", []byte(strings.Replace(string(good), `"hash":"`, `"hashx":"`, 1)), false, "hashx", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEventLine(tc.line)
			switch {
			case err == nil:
				t.Fatalf("accepted %s", tc.line)
			case tc.unknown != errors.Is(err, ErrUnknownEvent):
				t.Fatalf("ErrUnknownEvent = %v, want %v: %v", !tc.unknown, tc.unknown, err)
			case tc.hash && !errors.Is(err, ErrHashMismatch):
				t.Fatalf("want ErrHashMismatch, got %v", err)
			}
			var fe *FieldError
			if tc.path != "" && (!errors.As(err, &fe) || fe.Path != tc.path) {
				t.Fatalf("error = %v, want field %q", err, tc.path)
			}
		})
	}
}

func TestEncodeRejectsInvalidEvents(t *testing.T) {
	c := fixedChain()
	bad := []Event{
		&RunStarted{AgentKey: "a", Mode: "x"},
		&ToolCompleted{ToolUseID: "t", ToolName: "n", InputSHA256: ZeroHash, Status: "maybe", Result: json.RawMessage(`{}`)},
		&RunReleased{ApprovalRequestID: uApprove, Decision: warrant.DecisionDenied, EffectRef: uRun},
		&ModelUsage{ModelID: "m", CostUSD: "-1"},
		&ModelUsage{ModelID: "m", CostUSD: "0.01", ReservedUSD: "-0.02"},
		&ModelUsage{ModelID: "m", CostUSD: "0.01", ReservedUSD: "2e-2"},
		&TurnCompleted{Turn: 1, StopReason: "end_turn", Content: []ContentBlock{{Type: "image"}}},
	}
	for _, e := range bad {
		if _, err := c.Next(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s accepted: %v", e.EventType(), err)
		}
	}
	if c.Seq != 0 {
		t.Fatal("a rejected event advanced the chain")
	}
}

// A model.usage line carries the call's reservation (reserved_usd) or none
// (lines written before reservations), and either parses back as written.
func TestModelUsageReservedUSD(t *testing.T) {
	for _, reserved := range []string{"", "0.037512345"} {
		c := fixedChain()
		if _, err := c.Append(sampleEvents()[0]); err != nil {
			t.Fatal(err)
		}
		l, err := c.Append(&ModelUsage{Turn: 1, ModelID: "m", Usage: Usage{InputTokens: 10}, CostUSD: "0.01", ReservedUSD: reserved})
		if err != nil {
			t.Fatalf("reserved %q: %v", reserved, err)
		}
		if got := bytes.Contains(l.Raw, []byte(`"reserved_usd"`)); got != (reserved != "") {
			t.Errorf("reserved %q: line %s", reserved, l.Raw)
		}
		p, err := ParseEventLine(l.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if u := p.Event.(*ModelUsage); u.ReservedUSD != reserved || u.CostUSD != "0.01" {
			t.Errorf("parsed %+v", u)
		}
	}
}

func TestReadLedgerNamesFirstBadLine(t *testing.T) {
	lines := sampleLedger(t)
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l.Raw)
		buf.WriteByte('\n')
	}
	n := 0
	if err := ReadLedger(bytes.NewReader(buf.Bytes()), func(Line) error { n++; return nil }); err != nil || n != len(lines) {
		t.Fatalf("good ledger: n=%d err=%v", n, err)
	}
	cases := map[string]struct {
		data   []byte
		lineNo int
	}{
		"swapped lines": {joinLines(lines[0], lines[2], lines[1]), 2},
		"missing line":  {joinLines(lines[0], lines[1], lines[3]), 3},
		"foreign chain": {joinLines(lines[0], lines[1], otherLine(t, lines[1])), 3},
		"tampered line": {bytes.Replace(buf.Bytes(), []byte("File the motion."), []byte("Drop the motion."), 1), 1},
		"blank line":    {append(joinLines(lines[0]), '\n'), 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ReadLedger(bytes.NewReader(tc.data), func(Line) error { return nil })
			var le *LineError
			if !errors.As(err, &le) || le.LineNo != tc.lineNo {
				t.Fatalf("err = %v, want line %d", err, tc.lineNo)
			}
		})
	}
}

// otherLine is a valid line 3 that claims to follow prev but was hashed in another chain.
func otherLine(t *testing.T, prev Line) Line {
	c := ChainAfter(prev)
	c.Head = ZeroHash
	l, err := c.Append(&RunCompleted{StopReason: "end_turn", FinalText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func joinLines(ls ...Line) []byte {
	var b bytes.Buffer
	for _, l := range ls {
		b.Write(l.Raw)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// A line another writer stored in non-canonical form (spacing, key order,
// escapes) hashes by its canonical form all the same: the fast path for
// canonical bytes must not change what verifies.
func TestNonCanonicalLineVerifiesByCanonicalForm(t *testing.T) {
	l := sampleLedger(t)[4]
	var m map[string]any
	if err := json.Unmarshal(l.Raw, &m); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(m, "", "  ") // re-ordered keys stay sorted; add spacing and \u escapes
	pretty = bytes.Replace(pretty, []byte(`"Superior Court"`), []byte(`"Superior \u0043ourt"`), 1)
	got, err := ParseEventLine(pretty)
	if err != nil {
		t.Fatalf("non-canonical copy rejected: %v", err)
	}
	if got.Hash != l.Hash {
		t.Fatal("hash differs")
	}
	tampered := bytes.Replace(pretty, []byte(`\u0043ourt`), []byte(`\u0044ourt`), 1)
	if _, err := ParseEventLine(tampered); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("tampered non-canonical copy: %v", err)
	}
}

// TestSignedLineMatchesFullCanonicalization: inserting the hash member into
// the canonical unsigned line gives the same bytes as canonicalizing the
// signed line in full, for every event type and for header strings that take
// the fallback (escapes, non-ASCII, a key-order trap).
func TestSignedLineMatchesFullCanonicalization(t *testing.T) {
	headers := []struct{ createdAt, firmID string }{
		{"2026-12-02T10:00:00.123Z", uFirm},
		{"2026-12-02T10:00:00.123Z", `a"b`},
		{"2026-12-02T10:00:00.123Z", "caf\u00e9"},
		{"tab\there", uFirm},
		{"<&>", "\u2028"},
		{"", ""},
	}
	var fast, full int
	for _, e := range sampleEvents() {
		payload, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range headers {
			w := lineWire{SchemaVersion: SchemaVersion, Seq: 7, RunID: uRun, FirmID: h.firmID,
				Type: e.EventType(), CreatedAt: h.createdAt, PrevHash: ZeroHash, Payload: payload}
			unsigned, _ := json.Marshal(w)
			c, err := Canonicalize(unsigned)
			if err != nil {
				t.Fatal(err)
			}
			w.Hash = sha256Hex(c)
			got, err := signedLine(c, w)
			if err != nil {
				t.Fatal(err)
			}
			signed, _ := json.Marshal(w)
			want, err := jcs.Transform(signed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %q/%q:\n got %s\nwant %s", e.EventType(), h.createdAt, h.firmID, got, want)
			}
			if plainASCII(h.createdAt) && plainASCII(h.firmID) {
				fast++
			} else {
				full++
			}
		}
	}
	if fast == 0 || full == 0 {
		t.Fatalf("both paths must be exercised: fast %d full %d", fast, full)
	}
}
