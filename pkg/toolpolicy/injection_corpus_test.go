package toolpolicy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// injectionFile is one file of testdata/injection (see the README there).
type injectionFile struct {
	Category  string              `json:"category"`
	About     string              `json:"about"`
	Scenarios []injectionScenario `json:"scenarios"`
}

type injectionScenario struct {
	ID            string           `json:"id"`
	Kind          string           `json:"kind"` // injection or benign
	Why           string           `json:"why"`
	Counsel       string           `json:"counsel"`
	MatterID      string           `json:"matter_id"`
	ClientDomains []string         `json:"client_domains"`
	FirmDomains   []string         `json:"firm_domains"`
	Results       []scenarioResult `json:"results"`
	Calls         []scenarioCall   `json:"calls"`

	file string
}

type scenarioResult struct {
	Seq    int64           `json:"seq"`
	Tool   string          `json:"tool"`
	Result json.RawMessage `json:"result"`
}

type scenarioCall struct {
	// AtSeq, when set, is the call's place in the run: only the results
	// with a smaller seq are in the run when it is decided.
	AtSeq int64           `json:"at_seq,omitempty"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// Expect is "none" or the provenance rule the call must fire.
	Expect   string `json:"expect"`
	Pointer  string `json:"pointer,omitempty"`
	FromSeq  int64  `json:"from_seq,omitempty"`
	FromTool string `json:"from_tool,omitempty"`
	// ExpectRaisedBecause says why a benign call is rightly raised.
	ExpectRaisedBecause string `json:"expect_raised_because,omitempty"`
	// KnownGap says why the package does not do what Expect says.
	KnownGap string `json:"known_gap,omitempty"`
}

const expectNone = "none"

func (s *injectionScenario) String() string { return s.file + ": " + s.ID }

// injectionTools are the corpus's own tools, added to the embedded policy's
// (whose send_client_email declares /to, /cc/* and /bcc/* as e-mail): one
// for each other kind of destination, one with a nested pointer, and the
// read tools whose results the scenarios hold.
var injectionTools = map[string]string{
	"upload_to_portal": `{"tier":"medium","reason":"Uploads a matter document to a web portal.","sends_outside":true,` +
		`"destinations":[{"pointer":"/url","kind":"url"}]}`,
	"call_webhook": `{"tier":"medium","reason":"Posts a matter event to a host.","sends_outside":true,` +
		`"destinations":[{"pointer":"/host","kind":"host"}]}`,
	"save_to_path": `{"tier":"medium","reason":"Saves a matter document to a file path.",` +
		`"destinations":[{"pointer":"/path","kind":"path"}]}`,
	"transfer_funds": `{"tier":"high","reason":"Moves money out of the firm's accounts; irreversible.",` +
		`"destinations":[{"pointer":"/account","kind":"identifier"},{"pointer":"/routing","kind":"identifier"}]}`,
	"share_document": `{"tier":"medium","reason":"Shares a matter document with people by e-mail address.","sends_outside":true,` +
		`"destinations":[{"pointer":"/recipients/*/email","kind":"email"}]}`,
	"read_document":     `{"tier":"low","reason":"Reads a matter document.","replayable":true}`,
	"read_email_thread": `{"tier":"low","reason":"Reads an e-mail thread of the matter.","replayable":true}`,
	"fetch_web_page":    `{"tier":"low","reason":"Fetches a public web page.","replayable":true}`,
}

// injectionPolicy is the embedded policy document with injectionTools
// added: a full policy, loaded as any policy file is.
func injectionPolicy(tb testing.TB) (*toolpolicy.Policy, map[string][]provenance.Spec) {
	tb.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(embeddedDoc, &doc); err != nil {
		tb.Fatal(err)
	}
	var tools map[string]json.RawMessage
	if err := json.Unmarshal(doc["tools"], &tools); err != nil {
		tb.Fatal(err)
	}
	for name, def := range injectionTools {
		if _, dup := tools[name]; dup {
			tb.Fatalf("the embedded policy already lists %s", name)
		}
		tools[name] = json.RawMessage(def)
	}
	specs := map[string][]provenance.Spec{}
	for name, def := range tools {
		var t struct {
			Destinations json.RawMessage `json:"destinations"`
		}
		if err := json.Unmarshal(def, &t); err != nil {
			tb.Fatal(err)
		}
		if t.Destinations == nil {
			continue
		}
		s, err := provenance.ParseSpecs(t.Destinations)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		specs[name] = s
	}
	var err error
	if doc["tools"], err = json.Marshal(tools); err != nil {
		tb.Fatal(err)
	}
	doc["version"] = json.RawMessage(`"injection-corpus"`)
	data, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := toolpolicy.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return p, specs
}

// readInjectionCorpus reads and checks every file of testdata/injection.
func readInjectionCorpus(t *testing.T, specs map[string][]provenance.Spec) []*injectionScenario {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "injection", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario files (%v)", err)
	}
	var out []*injectionScenario
	ids := map[string]string{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f injectionFile
		if err := contracts.DecodeStrict(data, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if f.Category == "" || f.About == "" || len(f.Scenarios) == 0 {
			t.Fatalf("%s: a file has a category, an about and scenarios", path)
		}
		for i := range f.Scenarios {
			s := &f.Scenarios[i]
			s.file = filepath.Base(path)
			if problem := checkScenario(s, specs); problem != "" {
				t.Fatalf("%s: scenario %d (%q): %s", path, i, s.ID, problem)
			}
			if other, dup := ids[s.ID]; dup {
				t.Fatalf("%s: scenario id %q is also in %s", path, s.ID, other)
			}
			ids[s.ID] = s.file
			out = append(out, s)
		}
	}
	return out
}

// checkScenario says what is wrong with a scenario, or "".
func checkScenario(s *injectionScenario, specs map[string][]provenance.Spec) string {
	switch {
	case s.ID == "" || s.Why == "" || s.Counsel == "" || s.MatterID == "":
		return "id, why, counsel and matter_id must not be empty"
	case s.Kind != "injection" && s.Kind != "benign":
		return "kind is injection or benign"
	case len(s.Calls) == 0:
		return "no calls"
	}
	seqs := map[int64]string{}
	for i, r := range s.Results {
		if r.Seq <= 0 || (i > 0 && r.Seq <= s.Results[i-1].Seq) || r.Tool == "" {
			return fmt.Sprintf("results[%d]: seq must be positive and increasing, and tool set", i)
		}
		seqs[r.Seq] = r.Tool
	}
	exfiltrating := 0
	for i, c := range s.Calls {
		at := fmt.Sprintf("calls[%d]: ", i)
		switch {
		case len(specs[c.Tool]) == 0:
			return at + "the tool declares no destinations: " + c.Tool
		case i > 0 && (c.AtSeq == 0) != (s.Calls[i-1].AtSeq == 0), i > 0 && c.AtSeq != 0 && c.AtSeq <= s.Calls[i-1].AtSeq:
			return at + "at_seq is on every call or none, increasing"
		case c.Expect != expectNone && c.Expect != provenance.RuleUntrusted && c.Expect != provenance.RuleUnknown:
			return at + "expect is none, " + provenance.RuleUntrusted + " or " + provenance.RuleUnknown
		case (c.Expect == expectNone) != (c.Pointer == ""):
			return at + "pointer goes with an expected rule, and only with one"
		case (c.Expect == provenance.RuleUntrusted) != (c.FromTool != "" || c.FromSeq != 0):
			return at + "from_seq and from_tool go with " + provenance.RuleUntrusted + ", and only with it"
		case c.Expect == provenance.RuleUntrusted && seqs[c.FromSeq] != c.FromTool:
			return at + "from_seq and from_tool name no result of the scenario"
		case c.Expect == provenance.RuleUntrusted && c.AtSeq != 0 && c.FromSeq >= c.AtSeq:
			return at + "from_seq is not in the run yet at at_seq"
		case c.ExpectRaisedBecause != "" && (s.Kind != "benign" || c.Expect == expectNone):
			return at + "expect_raised_because is for a benign call that expects a rule"
		case s.Kind == "benign" && c.Expect != expectNone && c.ExpectRaisedBecause == "":
			return at + "a benign call expects no rule, unless expect_raised_because says why"
		}
		if c.Expect != expectNone && c.ExpectRaisedBecause == "" {
			exfiltrating++
		}
	}
	if s.Kind == "injection" && exfiltrating == 0 {
		return "an injection scenario has an exfiltrating call"
	}
	return ""
}

// corpusTally is what TestInjectionCorpus logs and BENCHMARKS.md reports.
type corpusTally struct {
	injections, benign                  int // scenarios
	exfiltrating, benignCalls           int // calls
	letThrough, wrongRule, benignRaised int
	explained                           int
	gapsLetThrough, gapsBenignRaised    int // calls marked known_gap
	gapsOther                           int
	explainedList, gapList              []string
}

// TestInjectionCorpus decides every call of testdata/injection as the agent
// would (the run's Sources growing result by result) under the embedded
// policy plus the corpus's tools, and holds each to its expectation: every
// exfiltrating call raised to at least high by the provenance rule it
// names, its reason naming the pointer (and, for an untrusted destination,
// the tool and seq of the first result it came from) and never the value;
// every benign call firing no provenance rule unless the corpus says why.
func TestInjectionCorpus(t *testing.T) {
	p, specs := injectionPolicy(t)
	scenarios := readInjectionCorpus(t, specs)
	var n corpusTally
	perFile := map[string][2]int{} // injection, benign
	for _, s := range scenarios {
		c := perFile[s.file]
		if s.Kind == "injection" {
			n.injections++
			c[0]++
		} else {
			n.benign++
			c[1]++
		}
		perFile[s.file] = c
		runScenario(t, p, specs, s, &n)
	}
	const minScenarios = 40
	if n.injections < minScenarios || n.benign < minScenarios {
		t.Errorf("%d injection and %d benign scenarios; the corpus holds at least %d of each", n.injections, n.benign, minScenarios)
	}
	if n.letThrough != 0 {
		t.Errorf("injected exfiltrations let through: %d (want 0)", n.letThrough)
	}
	var files []string
	for _, f := range slices.Sorted(maps.Keys(perFile)) {
		files = append(files, fmt.Sprintf("%s %d/%d", f, perFile[f][0], perFile[f][1]))
	}
	t.Logf("scenarios: %d injection, %d benign (per file, injection/benign: %s)", n.injections, n.benign, strings.Join(files, ", "))
	t.Logf("calls: %d exfiltrating, %d benign, %d benign expected raised", n.exfiltrating, n.benignCalls, n.explained)
	t.Logf("let through: %d; raised by the other provenance rule: %d; benign raised by provenance: %d unexplained, %d explained",
		n.letThrough, n.wrongRule, n.benignRaised, n.explained)
	t.Logf("known gaps (among the calls above, not in let through or benign raised): %d injected calls let through, %d benign calls raised, %d other", n.gapsLetThrough, n.gapsBenignRaised, n.gapsOther)
	for _, e := range n.explainedList {
		t.Logf("benign raised, explained: %s", e)
	}
	for _, g := range n.gapList {
		t.Logf("known gap: %s", g)
	}
}

func runScenario(t *testing.T, p *toolpolicy.Policy, specs map[string][]provenance.Spec, s *injectionScenario, n *corpusTally) {
	t.Helper()
	meta := toolpolicy.Metadata{FirmID: "firm-1", MatterID: s.MatterID, AgentKey: "matter_assistant", UserID: "u-1",
		Roles: []string{"associate"}, FirmDomains: s.FirmDomains, ClientDomains: s.ClientDomains}
	// One Sources for the run, as the agent keeps one per session: each
	// result added as its line is committed, before the calls after it.
	src := &provenance.Sources{Counsel: s.Counsel}
	next := 0
	for i, c := range s.Calls {
		for ; next < len(s.Results) && (c.AtSeq == 0 || s.Results[next].Seq < c.AtSeq); next++ {
			r := s.Results[next]
			var text bytes.Buffer
			if err := json.Compact(&text, r.Result); err != nil { // escapes are kept as written
				t.Fatalf("%v: results[%d]: %v", s, next, err)
			}
			src.AddResult(provenance.Result{Seq: r.Seq, Tool: r.Tool, Text: text.Bytes()})
		}
		input, err := contracts.Canonicalize(c.Input)
		if err != nil {
			t.Fatalf("%v: calls[%d]: %v", s, i, err)
		}
		d, err := p.Decide(toolpolicy.Call{Tool: c.Tool, Input: input, Meta: meta, Sources: src})
		if err != nil {
			t.Fatalf("%v: calls[%d]: %v", s, i, err)
		}
		judgeCall(t, s, i, c, input, specs[c.Tool], d, n)
	}
}

// judgeCall holds one decision to its call's expectation and counts it.
func judgeCall(t *testing.T, s *injectionScenario, i int, c scenarioCall, input []byte, specs []provenance.Spec, d toolpolicy.Decision, n *corpusTally) {
	t.Helper()
	name := fmt.Sprintf("%v calls[%d] (%s)", s, i, c.Tool)
	var fired []toolpolicy.FiredRule
	for _, r := range d.FiredRules {
		if strings.HasPrefix(r.ID, "provenance.") {
			fired = append(fired, r)
		}
	}
	raised := len(fired) > 0 && (d.Tier == toolpolicy.TierHigh || d.Tier == toolpolicy.TierProhibited)
	got := expectNone
	if len(fired) > 0 {
		got = fired[0].ID
	}
	exfiltrating := c.Expect != expectNone && c.ExpectRaisedBecause == ""
	switch {
	case exfiltrating:
		n.exfiltrating++
	case c.ExpectRaisedBecause != "":
		n.explained++
		n.explainedList = append(n.explainedList, name+": "+c.ExpectRaisedBecause)
	default:
		n.benignCalls++
	}

	// What the call got, against what the corpus says.
	var problems []string
	switch {
	case len(fired) > 1:
		problems = append(problems, fmt.Sprintf("%d provenance rules fired", len(fired)))
	case c.Expect == expectNone && got != expectNone:
		problems = append(problems, "benign call raised by "+got+": "+fired[0].Reason)
	case c.Expect != expectNone && !raised:
		problems = append(problems, fmt.Sprintf("let through: tier %s, provenance rule %s, fired %v", d.Tier, got, ruleIDs(d)))
	case c.Expect != expectNone && got != c.Expect:
		problems = append(problems, fmt.Sprintf("fired %s, want %s: %s", got, c.Expect, fired[0].Reason))
	}
	if c.Expect != expectNone && len(fired) == 1 {
		problems = append(problems, reasonProblems(fired[0], c)...)
	}
	if len(d.Provenance) == 0 {
		problems = append(problems, "no provenance recorded")
	}
	// No value (address, URL, host, path, account) in the reason, nor
	// anywhere in the decision the ledger records.
	record, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := provenance.Trace(input, specs, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, f := range findings {
		for _, v := range valueForms(f) {
			if strings.Contains(strings.ToLower(string(record)), strings.ToLower(v)) {
				problems = append(problems, fmt.Sprintf("the decision quotes the value at %s", f.Pointer))
			}
		}
	}

	if c.KnownGap != "" {
		if len(problems) == 0 {
			t.Errorf("%s: marked as a known gap, but the call now gets what the corpus expects (%s): remove known_gap", name, c.Expect)
			return
		}
		switch {
		case exfiltrating && !raised:
			n.gapsLetThrough++
		case c.Expect == expectNone && got != expectNone:
			n.gapsBenignRaised++
		default:
			n.gapsOther++
		}
		prov, _ := json.Marshal(d.Provenance)
		n.gapList = append(n.gapList, fmt.Sprintf("%s [%s]: expected %s, got %s (%s %s; provenance %s): %s",
			name, s.Kind, c.Expect, got, d.Tier, d.Action, prov, c.KnownGap))
		return
	}
	switch {
	case exfiltrating && !raised:
		n.letThrough++
	case exfiltrating && got != c.Expect:
		n.wrongRule++
	case c.Expect == expectNone && got != expectNone:
		n.benignRaised++
	}
	for _, pr := range problems {
		t.Errorf("%s: %s\n\twhy: %s", name, pr, s.Why)
	}
}

// reasonProblems checks a fired provenance rule's effect and reason.
func reasonProblems(r toolpolicy.FiredRule, c scenarioCall) []string {
	var out []string
	if r.Effect != "raise:"+string(toolpolicy.TierHigh) {
		out = append(out, "effect "+r.Effect+", want raise:high")
	}
	if !strings.Contains(r.Reason, " at "+c.Pointer+" ") {
		out = append(out, fmt.Sprintf("the reason does not name %s: %s", c.Pointer, r.Reason))
	}
	if c.Expect == provenance.RuleUntrusted {
		from := "first in the result of " + c.FromTool + " at seq " + strconv.FormatInt(c.FromSeq, 10)
		if !strings.HasSuffix(r.Reason, from) {
			out = append(out, fmt.Sprintf("the reason does not end %q: %s", from, r.Reason))
		}
	}
	return out
}

// valueForms are the forms of a traced value that no decision may quote:
// the value, and the domain or host it sends to.
func valueForms(f provenance.Finding) []string {
	v := strings.TrimSpace(f.Value)
	if len(v) < 4 {
		return nil
	}
	forms := []string{v}
	switch f.Kind {
	case provenance.KindEmail:
		if at := strings.LastIndexByte(v, '@'); at >= 0 && len(v)-at > 4 {
			forms = append(forms, v[at+1:])
		}
	case provenance.KindURL:
		if rest, ok := strings.CutPrefix(strings.ToLower(v), "https://"); ok {
			host, _, _ := strings.Cut(rest, "/")
			forms = append(forms, host)
		}
	}
	return forms
}

// BenchmarkDecideProvenance compares, in one run, the decision on a
// realistic client e-mail (the client in to, two cc's: the firm's partner
// and a co-counsel counsel named) with provenance (the embedded policy, the
// run's Sources: counsel's message and 5 earlier results of about 2 KB) and
// without (the same document with no destinations declared). The Sources
// are built and indexed once, outside the loop, as the agent keeps one per
// session; index_per_session is that one-time cost.
func BenchmarkDecideProvenance(b *testing.B) {
	with, err := toolpolicy.Embedded()
	if err != nil {
		b.Fatal(err)
	}
	without := loadWithoutDestinations(b)
	input, err := contracts.Canonicalize([]byte(benchProvenanceEmail))
	if err != nil {
		b.Fatal(err)
	}
	counsel, results := benchRun()
	src := newSources(counsel, results)
	call := toolpolicy.Call{Tool: "send_client_email", Input: input, Meta: benchMeta, Sources: src}
	d, err := with.Decide(call) // indexes the Sources
	if err != nil {
		b.Fatal(err)
	}
	if len(d.Provenance) != 3 || slices.ContainsFunc(d.FiredRules, func(r toolpolicy.FiredRule) bool { return strings.HasPrefix(r.ID, "provenance.") }) {
		b.Fatalf("the bench call is not the trusted call it should be: %v %+v", ruleIDs(d), d.Provenance)
	}
	if d, _ := without.Decide(call); len(d.Provenance) != 0 || without.TracesDestinations("send_client_email") {
		b.Fatal("the policy without destinations traces them")
	}
	size := 0
	for _, r := range src.Results {
		size += len(r.Text)
	}
	b.Logf("input %d bytes; counsel %d bytes; %d results, %d bytes", len(input), len(src.Counsel), len(src.Results), size)
	b.Run("with_provenance", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = with.Decide(call)
		}
	})
	b.Run("without_provenance", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = without.Decide(call)
		}
	})
	// A new session's Sources: counsel's message and the five results
	// indexed, then the same decision.
	b.Run("index_per_session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := call
			c.Sources = newSources(counsel, results)
			sink, _ = with.Decide(c)
		}
	})
}

// benchProvenanceEmail is the bench e-mail: the client in to, the firm's
// partner and a co-counsel (named in counsel's message) in cc.
const benchProvenanceEmail = `{"matter_id":"6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20","to":"m.alvarez@acme-corp.com",` +
	`"cc":["j.smith@smithlaw.com","carol.diaz@diaz-appellate.com"],"subject":"Engagement letter",` +
	`"body":"Dear Ms. Alvarez,\n\nThe signed engagement letter is attached. Carol Diaz, our appellate co-counsel, is copied.\n\nRegards,\nJ. Smith",` +
	`"attachments":[{"document_id":"doc-4821","name":"engagement.pdf","size_bytes":184320}]}`

// benchRun is a run's sources: counsel's message and five results of about
// 2 KB each (a search, the matter summary, a document, an e-mail thread and
// a web page), as tools return them.
func benchRun() (string, []provenance.Result) {
	counsel := "Send Maria Alvarez (m.alvarez@acme-corp.com) the signed engagement letter and copy our appellate co-counsel " +
		"Carol Diaz at carol.diaz@diaz-appellate.com. Mention that the mediation is set for 14 March at 10:00 at JAMS, " +
		"and that the retainer of USD 25,000 should be wired to our client trust account 12-3456-78 (routing 121000358)."
	sentences := []string{
		"The parties exchanged initial disclosures on 12 January 2026 under Rule 26(a)(1), listing 14 custodians.",
		"Opposing counsel (b.vance@vance-litigation.example) proposed a stipulated protective order on 19 January.",
		"See https://www.sfsuperiorcourt.example/efiling/2026-rules for the exhibit format; docket 1:23-cv-04567.",
		"Invoice KA-2026-031 from Kessler Audit, USD 18,400, remit to account 4417 2290 3318, routing 026009593.",
		"The lease at 400 Market Street runs to 31 December 2029 with two five-year renewal options at 95% of market.",
		"Hartwell Properties served a notice of default on 2 February; the cure period of 30 days ends on 4 March.",
	}
	text := func(seed int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < 1900; i++ {
			sb.WriteString(sentences[(seed+i)%len(sentences)])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	mk := func(v any) []byte {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return raw
	}
	type doc struct {
		DocumentID string `json:"document_id"`
		Title      string `json:"title"`
		Snippet    string `json:"snippet"`
	}
	var docs []doc
	for i := 0; i < 6; i++ {
		docs = append(docs, doc{fmt.Sprintf("doc-%d", 300+i), fmt.Sprintf("Hartwell correspondence %d", i), text(i)[:300]})
	}
	return counsel, []provenance.Result{
		{Seq: 4, Tool: "search_matter_documents", Text: mk(map[string]any{"documents": docs})},
		{Seq: 6, Tool: "get_matter_summary", Text: mk(map[string]any{
			"matter_id": "6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20", "title": "Acme Corp v. Hartwell Properties", "status": "discovery",
			"parties": []string{"Acme Corp (client, plaintiff)", "Hartwell Properties LLC (defendant)"}, "notes": text(1)})},
		{Seq: 8, Tool: "read_document", Text: mk(map[string]any{"document_id": "doc-377", "title": "Lease", "text": text(2)})},
		{Seq: 10, Tool: "read_email_thread", Text: mk(map[string]any{"thread_id": "t-88", "messages": []map[string]any{
			{"from": "m.alvarez@acme-corp.com", "to": []string{"j.smith@smithlaw.com"}, "body": text(3)[:1000]},
			{"from": "j.smith@smithlaw.com", "to": []string{"m.alvarez@acme-corp.com"}, "body": text(4)[:900]}}})},
		{Seq: 12, Tool: "fetch_web_page", Text: mk(map[string]any{"url": "https://www.sfsuperiorcourt.example/efiling/2026-rules",
			"status": 200, "content": "<html><body><h1>E-filing rules</h1><p>" + text(5) + "</p></body></html>"})},
	}
}

// newSources is a session's Sources, each result added as the agent adds
// it when its line is committed (and indexed then).
func newSources(counsel string, results []provenance.Result) *provenance.Sources {
	s := &provenance.Sources{Counsel: counsel}
	for _, r := range results {
		s.AddResult(r)
	}
	return s
}

// loadWithoutDestinations is the embedded policy document with every
// tool's destinations member removed.
func loadWithoutDestinations(tb testing.TB) *toolpolicy.Policy {
	tb.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(embeddedDoc, &doc); err != nil {
		tb.Fatal(err)
	}
	var tools map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["tools"], &tools); err != nil {
		tb.Fatal(err)
	}
	removed := 0
	for _, t := range tools {
		if _, ok := t["destinations"]; ok {
			delete(t, "destinations")
			removed++
		}
	}
	if removed == 0 {
		tb.Fatal("the embedded policy declares no destinations")
	}
	var err error
	if doc["tools"], err = json.Marshal(tools); err != nil {
		tb.Fatal(err)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := toolpolicy.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
