package provenance

import (
	"bytes"
	"encoding/json"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"strings"
)

// Source names where a value was found. The trusted sources are counsel's
// message, the matter registry and the firm's settings; a tool's result is
// untrusted content (whatever a document says, the model may repeat).
type Source string

const (
	SourceCounsel    Source = contracts.SourceCounselMessage
	SourceMatter     Source = contracts.SourceMatter
	SourceFirm       Source = contracts.SourceFirm
	SourceToolResult Source = contracts.SourceToolResult
)

// Trusted reports whether s is one of the trusted sources.
func (s Source) Trusted() bool { return s == SourceCounsel || s == SourceMatter || s == SourceFirm }

// Matter is what the matter registry says of the run's matter.
type Matter struct {
	// ClientDomains are the client's e-mail domains (warrant.Matter's,
	// the PolicyMetadata's client_domains): an address or host on one is
	// trusted by the registry.
	ClientDomains []string
	// Parties are the matter's parties as the registry writes them (names,
	// addresses, account or docket numbers), each read as a text. The
	// registry holds none yet (warrant.Matter has no parties); the field
	// is here so that adding them is a store change, not a change of this
	// package's API.
	Parties []string
}

// Firm is what the firm's settings say.
type Firm struct {
	// Domains are the firm's own e-mail domains (warrant.FirmSettings's
	// Domains, the PolicyMetadata's firm_domains).
	Domains []string
}

// Result is one earlier tool call's result in the run.
type Result struct {
	// Seq is the ledger seq of the tool.completed line that recorded it.
	Seq int64
	// Tool is the tool that produced it.
	Tool string
	// Text is the result as the model saw it (tool.completed's result,
	// raw JSON). A JSON text is read both as it is and as its decoded
	// strings, so an escape ("\u0040", "\n" before an address) neither
	// hides a value nor glues it to its neighbour.
	Text []byte
}

// Sources are everything a run's outbound values may have come from, and
// the index Trace reads them through. Each text is read once: counsel's
// message and the registry on the first Trace, each result when AddResult
// takes it (or, for results appended to Results directly, on the next
// Trace). A trace is then map lookups, not scans, except for paths, which
// are searched for in each text.
//
// The agent keeps one Sources per session: Counsel, Matter and Firm set when
// the session starts and not changed after the first Trace (build a new
// Sources if they change), results added as their lines are committed or
// folded on resume. A Sources is not safe for concurrent use: Trace may
// index, and reuses buffers the Sources holds.
type Sources struct {
	// Counsel is counsel's message that started the run (run.started's
	// counsel_message).
	Counsel string
	Matter  Matter
	Firm    Firm
	// Results are the run's tool results, in ledger order. Append only.
	Results []Result

	built     bool
	texts     []*textIndex // 0: counsel, then parties, then results
	origins   []Origin     // texts[i]'s origin
	indexed   int          // Results[:indexed] are in texts
	tokens    map[string][]tokPos
	emails    map[string][]int32 // address -> texts holding it
	hosts     map[string][]int32 // host -> texts holding it
	scratch   selector
	originBuf []Origin
	// outOrigins is the array the current Trace's findings' origins are
	// copied into (a new one each Trace: the findings outlive it).
	outOrigins []Origin
}

type tokPos struct{ text, idx int32 }

// AddResult appends r to the run's results and indexes it.
func (s *Sources) AddResult(r Result) {
	s.Results = append(s.Results, r)
	s.build()
}

// build indexes whatever has not been indexed yet.
func (s *Sources) build() {
	if !s.built {
		s.built = true
		s.tokens = map[string][]tokPos{}
		s.emails = map[string][]int32{}
		s.hosts = map[string][]int32{}
		s.addText(indexText(s.Counsel), Origin{Source: SourceCounsel})
		for _, p := range s.Matter.Parties {
			s.addText(indexText(p), Origin{Source: SourceMatter})
		}
	}
	for ; s.indexed < len(s.Results); s.indexed++ {
		r := s.Results[s.indexed]
		s.addText(indexResult(r.Text), Origin{Source: SourceToolResult, Seq: r.Seq, Tool: r.Tool})
	}
}

func (s *Sources) addText(ix *textIndex, o Origin) {
	n := int32(len(s.texts))
	s.texts = append(s.texts, ix)
	s.origins = append(s.origins, o)
	for a := range ix.emails {
		s.emails[a] = append(s.emails[a], n)
	}
	for h := range ix.hosts {
		s.hosts[h] = append(s.hosts[h], n)
	}
	for i, t := range ix.tokens {
		s.tokens[t] = append(s.tokens[t], tokPos{n, int32(i)})
	}
	// The per-text sets are folded into the run's maps; only what the
	// identifier and path searches read is kept.
	ix.emails, ix.hosts = nil, nil
}

// indexResult reads a result's text, and if it is JSON holding escapes,
// its decoded strings (member names and values) as well.
func indexResult(text []byte) *textIndex {
	ix := indexText(string(text))
	if bytes.IndexByte(text, '\\') < 0 || !json.Valid(text) {
		return ix
	}
	var decoded strings.Builder
	dec := json.NewDecoder(bytes.NewReader(text))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if str, ok := tok.(string); ok {
			ix.add(str)
			// Kept for paths, one string a line, so a path is searched
			// in the text the model read.
			decoded.WriteByte('\n')
			decoded.WriteString(str)
		}
	}
	ix.text += "\n" + decoded.String()
	return ix
}
