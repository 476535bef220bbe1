// Package serve runs the reference tools for a server that offers them to
// Warrant, whatever carries the call: the MCP server (pkg/tools/mcpserver),
// the HTTPS endpoint and the Lambda function (cmd/toolserver, cmd/toolfn).
// Each carrier reads the call's effect_ref and run from its own envelope
// (MCP's _meta, HTTP headers, the Lambda payload), and Run does the rest the
// same way for all three: the scope's ids checked, the arguments checked
// against the tool's schema on their RFC 8785 form, the tool run once per
// effect_ref, and an outcome the carrier maps to its protocol: done, refused
// (the tool did not act: a fixed text the caller may show), or failed (the
// tool's own system failed after it may have acted: the caller must not
// read it as "not done").
package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
)

// The texts of refusals. They are fixed: nothing of an error's own text
// (which may carry AWS's) reaches the caller.
const (
	TextInvalidInput = "invalid arguments: they do not match the tool's input schema"
	TextOutOfScope   = "refused: matter_id is not this run's matter"
	TextNotInMatter  = "refused: a document_id is not a document of this run's matter"
	TextFailed       = "the tool failed"
	// TextAmbiguous follows TextInvalidInput for arguments two JSON
	// readers could read differently.
	TextAmbiguous = "not JSON with one reading (a duplicate key, or a number a double cannot hold exactly)"
	// TextUnknownTool answers a call of a tool the server does not offer.
	TextUnknownTool = "refused: no such tool"
)

// maxInvalidReported bounds how many places an invalid-arguments text names.
const maxInvalidReported = 5

// Kind is how a call ended.
type Kind int

const (
	// Done: the tool ran; Result is its JSON object.
	Done Kind = iota
	// Refused: the tool did not act; Text says why (a fixed text).
	Refused
	// Failed: the tool's own system failed, maybe after it acted; Err is
	// its error, for a failure envelope only, never for the caller.
	Failed
)

// Outcome is how one call ended.
type Outcome struct {
	Kind   Kind
	Result json.RawMessage
	Text   string
	// Log is the outcome's word for a log line ("ok", "invalid_arguments",
	// "out_of_scope", ...).
	Log string
	Err error
}

// Tools is a set of tools ready to run calls. It is safe for concurrent
// use.
type Tools struct {
	list   []tools.Tool
	byName map[string]compiled
}

type compiled struct {
	tool   tools.Tool
	schema *jsonschema.Schema
}

// New compiles each tool's schema (formats asserted). It fails on a schema
// that does not compile or is not an object schema, and on a name offered
// twice.
func New(ts []tools.Tool) (*Tools, error) {
	s := &Tools{byName: map[string]compiled{}}
	for _, t := range ts {
		if _, dup := s.byName[t.Name]; dup {
			return nil, fmt.Errorf("serve: tool %s is offered twice", t.Name)
		}
		schema, err := compile(t)
		if err != nil {
			return nil, err
		}
		s.byName[t.Name] = compiled{tool: t, schema: schema}
		s.list = append(s.list, t)
	}
	return s, nil
}

// List is the tools, in the order New had them.
func (s *Tools) List() []tools.Tool { return slices.Clone(s.list) }

// Scope checks a call's ids, each a canonical lowercase UUID, and returns
// them as the tool's scope; ok is false if any is missing or malformed.
func Scope(effectRef, firmID, runID, matterID string) (scope tools.Scope, ok bool) {
	for _, id := range []string{effectRef, firmID, runID, matterID} {
		if contracts.CheckUUID("id", id) != nil {
			return tools.Scope{}, false
		}
	}
	return tools.Scope{FirmID: firmID, RunID: runID, MatterID: matterID}, true
}

// Run runs the named tool for the effect effectRef of the run scope (from
// Scope) on args. Arguments that are not one JSON object the tool's schema
// accepts, or that two JSON readers could read differently, are refused
// with where they fail (JSON pointers and schema keywords, never a value);
// otherwise the tool runs on their RFC 8785 form: for Warrant's calls, the
// bytes counsel signed.
func (s *Tools) Run(ctx context.Context, name, effectRef string, scope tools.Scope, args json.RawMessage) Outcome {
	c, ok := s.byName[name]
	if !ok {
		return Outcome{Kind: Refused, Text: TextUnknownTool, Log: "unknown_tool"}
	}
	input, why := c.valid(args)
	if why != "" {
		return Outcome{Kind: Refused, Text: why, Log: "invalid_arguments"}
	}
	out, err := c.tool.Execute(tools.NewContext(ctx, scope), input, effectRef)
	switch {
	case errors.Is(err, tools.ErrOutOfScope):
		return Outcome{Kind: Refused, Text: TextOutOfScope, Log: "out_of_scope"}
	case errors.Is(err, tools.ErrDocumentNotInMatter):
		return Outcome{Kind: Refused, Text: TextNotInMatter, Log: "document_not_in_matter"}
	case err != nil:
		// The tool's own system failed (its outbox write): the effect may
		// have been recorded before the answer was lost.
		return Outcome{Kind: Failed, Text: TextFailed, Log: "failed", Err: err}
	}
	if !isObject(out) {
		return Outcome{Kind: Failed, Text: TextFailed, Log: "failed", Err: errors.New("serve: the tool's result is not a JSON object")}
	}
	return Outcome{Kind: Done, Result: out, Log: "ok"}
}

func compile(t tools.Tool) (*jsonschema.Schema, error) {
	var doc any
	if err := json.Unmarshal(t.Schema, &doc); err != nil {
		return nil, fmt.Errorf("serve: tool %s schema: %w", t.Name, err)
	}
	if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
		return nil, fmt.Errorf(`serve: tool %s schema: not {"type":"object",...}`, t.Name)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(t.Name+".json", doc); err != nil {
		return nil, fmt.Errorf("serve: tool %s schema: %w", t.Name, err)
	}
	schema, err := c.Compile(t.Name + ".json")
	if err != nil {
		return nil, fmt.Errorf("serve: tool %s schema: %w", t.Name, err)
	}
	return schema, nil
}

// valid returns the arguments' RFC 8785 form when they are one JSON object
// the tool's schema accepts, else the text to answer with. Canonical bytes
// also refuse what two readers could read differently (duplicate keys,
// numbers a double cannot hold).
func (c compiled) valid(args json.RawMessage) (json.RawMessage, string) {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage(`{}`) // arguments are optional in tools/call
	}
	canonical, _, err := contracts.CanonicalInput(args)
	if err != nil {
		return nil, TextInvalidInput + ": " + TextAmbiguous
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canonical))
	if err != nil {
		return nil, TextInvalidInput
	}
	if err := c.schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, TextInvalidInput + ": " + where(ve)
		}
		return nil, TextInvalidInput
	}
	return canonical, ""
}

// safeSegment is what of an instance location may be shown: the schema's
// own property names and array indexes. Anything else (a name only the
// input spelled) is shown as "*".
var safeSegment = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// where says where the arguments fail: at most maxInvalidReported leaves of
// the validation error, each a JSON pointer and the keyword it fails, with a
// required property's name (the schema's). No value of the input is shown.
func where(ve *jsonschema.ValidationError) string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		segs := make([]string, len(e.InstanceLocation))
		for i, s := range e.InstanceLocation {
			if !safeSegment.MatchString(s) {
				s = "*"
			}
			segs[i] = s
		}
		msg := "/" + strings.Join(segs, "/")
		if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 {
			msg += " (" + kw[len(kw)-1]
			if r, ok := e.ErrorKind.(*kind.Required); ok {
				missing := slices.DeleteFunc(slices.Clone(r.Missing), func(s string) bool { return !safeSegment.MatchString(s) })
				msg += ": " + strings.Join(missing, ", ")
			}
			msg += ")"
		}
		out = append(out, msg)
	}
	walk(ve)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxInvalidReported {
		out = append(out[:maxInvalidReported], "…")
	}
	return strings.Join(out, "; ")
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}
