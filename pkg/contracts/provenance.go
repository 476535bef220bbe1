package contracts

import "fmt"

// ProvenanceFinding is where one destination of a call (a recipient, a URL,
// a host, an identifier or a path its tool declares, pkg/provenance) was
// found in the run, as tool.requested records it: the value's pointer in
// the input, its kind and its origins, never the value. With the call's
// input and the run's ledger up to that line, `warrant ledger audit`
// traces the call again and holds this record to it.
type ProvenanceFinding struct {
	Pointer string `json:"pointer"`
	Kind    string `json:"kind"`
	// Unreadable: the value could not be traced (not a string, not of its
	// kind); why is left out, as it may describe the value.
	Unreadable bool               `json:"unreadable,omitempty"`
	Origins    []ProvenanceOrigin `json:"origins,omitempty"`
}

// ProvenanceOrigin is one place a destination appears: a trusted source
// (counsel's message, the matter registry, the firm's settings) or an
// earlier tool result, by its tool.completed line's seq and tool.
type ProvenanceOrigin struct {
	Source string `json:"source"`
	Seq    int64  `json:"seq,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// The provenance vocabulary (closed): the kinds a destination is declared
// as, and the sources a value may come from.
const (
	ProvenanceEmail      = "email"
	ProvenanceURL        = "url"
	ProvenanceHost       = "host"
	ProvenanceIdentifier = "identifier"
	ProvenancePath       = "path"

	SourceCounselMessage = "counsel_message"
	SourceMatter         = "matter"
	SourceFirm           = "firm"
	SourceToolResult     = "tool_result"
)

// checkProvenance validates a recorded provenance: each pointer is a JSON
// pointer into the input, each kind and source one of the vocabulary's, a
// tool result names its line and tool, a trusted source neither, and an
// unreadable value has no origins.
func checkProvenance(path string, fs []ProvenanceFinding) error {
	for i, f := range fs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if _, err := ParsePointer(f.Pointer); err != nil || f.Pointer == "" {
			return fieldErr(p+".pointer", "must be a JSON pointer into the input")
		}
		if err := oneOf(p+".kind", f.Kind, ProvenanceEmail, ProvenanceURL, ProvenanceHost, ProvenanceIdentifier, ProvenancePath); err != nil {
			return err
		}
		if f.Unreadable && len(f.Origins) > 0 {
			return fieldErr(p+".origins", "an unreadable value has no origins")
		}
		for j, o := range f.Origins {
			op := fmt.Sprintf("%s.origins[%d]", p, j)
			if err := oneOf(op+".source", o.Source, SourceCounselMessage, SourceMatter, SourceFirm, SourceToolResult); err != nil {
				return err
			}
			switch {
			case o.Source == SourceToolResult && o.Seq <= 0:
				return fieldErr(op+".seq", "must be the seq of the tool result's line")
			case o.Source == SourceToolResult && o.Tool == "":
				return fieldErr(op+".tool", "must name the tool whose result it is")
			case o.Source != SourceToolResult && (o.Seq != 0 || o.Tool != ""):
				return fieldErr(op+".seq", "only a tool result has a seq and a tool")
			}
		}
	}
	return nil
}
