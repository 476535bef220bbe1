package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
)

// Tool is one tool a brain offers its models and runs: its catalog entry
// (what the model sees, counsel's summary, the matter field, its class and
// timeout) and how a call reaches it: System, the target its entry names,
// or Execute, for a builtin run in process.
type Tool struct {
	catalog.Tool
	System  Target
	Execute func(ctx context.Context, input json.RawMessage, effectRef string) (json.RawMessage, error)
	// Server names the system that serves the tool, for counsel ("" for a
	// builtin).
	Server string
}

// Builtins binds the catalog's builtin entries to the in-process tools of
// the same names (pkg/tools' reference set, whose schemas they must pin).
func Builtins(cat *catalog.Catalog, ts []tools.Tool) ([]Tool, error) {
	byName := map[string]tools.Tool{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	var out []Tool
	for _, name := range cat.Names() {
		ct := cat.Tools[name]
		if ct.Target.Kind != catalog.TargetBuiltin {
			continue
		}
		t, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("agent: the catalog's builtin %s is not a tool of this build", name)
		}
		out = append(out, Tool{Tool: ct, Execute: t.Execute})
	}
	return out, nil
}

// ReferenceTools is the embedded catalog's tools (Warrant's reference set)
// run in process, recording effects in outbox.
func ReferenceTools(outbox tools.Outbox, now func() time.Time) ([]Tool, error) {
	cat, err := catalog.Embedded()
	if err != nil {
		return nil, err
	}
	return Builtins(cat, tools.Reference(outbox, now))
}

// MaxToolResultBytes bounds a tool's result as the model sees it and the
// ledger keeps it; a larger one is cut (truncated) with the whole result's
// hash recorded.
const MaxToolResultBytes = 64 << 10

// errToolReportedError is a tool that answered with its own error.
var errToolReportedError = errors.New("agent: the tool reported an error")

// callTool makes one call of a tool on its system, within the tool's
// timeout: the target's answer, or the builtin's. A tool's own error
// (isError) comes back as errToolReportedError.
func (s *session) callTool(ctx context.Context, t registeredTool, input json.RawMessage, effectRef string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(s.toolContext(ctx), t.Timeout)
	defer cancel()
	if t.System == nil {
		return t.Execute(ctx, input, effectRef)
	}
	res, err := t.System.Call(ctx, s.targetCall(t, input, effectRef))
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, errToolReportedError
	}
	return res.Content, nil
}

// Read tools are tried again after these pauses when their system could
// not be reached or their answer was lost (an effect never is).
var readBackoff = []time.Duration{200 * time.Millisecond, time.Second}

// callRead calls a read tool, trying again after a failure of its system
// (not after a refusal of a changed tool: its system answered).
func (s *session) callRead(ctx context.Context, t registeredTool, input json.RawMessage, effectRef string) (json.RawMessage, error) {
	var changed *ToolChangedError
	for attempt := 0; ; attempt++ {
		res, err := s.callTool(ctx, t, input, effectRef)
		if err == nil || t.System == nil || errors.Is(err, errToolReportedError) || errors.As(err, &changed) ||
			attempt == len(readBackoff) || !sleep(ctx, readBackoff[attempt]) {
			return res, err
		}
	}
}

// outcomeUnknown reports whether err leaves an effect's outcome unknown: the
// call may have left for its system and its answer was lost. Only a target
// that says nothing was sent, or a tool that answered with its own error,
// is known not to have acted; a builtin's error is its own answer.
func outcomeUnknown(t registeredTool, err error) bool {
	if err == nil || t.System == nil || errors.Is(err, errToolReportedError) {
		return false
	}
	return !errors.Is(err, warrant.ErrTargetUnreachable)
}

// bounded is a result the model and the ledger can hold: the result itself,
// or past MaxToolResultBytes a JSON object with its head, its size and the
// whole result's hash (also returned, for tool.completed).
func bounded(result json.RawMessage) (json.RawMessage, string, int64) {
	if len(result) <= MaxToolResultBytes {
		return result, "", 0
	}
	sum := sha256.Sum256(result)
	hash := hex.EncodeToString(sum[:])
	head := bytes.ToValidUTF8(result[:MaxToolResultBytes-1024], nil)
	cut, _ := json.Marshal(map[string]any{"truncated": true, "result_bytes": len(result), "result_sha256": hash,
		"head": string(head)})
	for len(cut) > MaxToolResultBytes { // escapes grew it: shorter head
		head = bytes.ToValidUTF8(head[:len(head)*3/4], nil)
		cut, _ = json.Marshal(map[string]any{"truncated": true, "result_bytes": len(result), "result_sha256": hash, "head": string(head)})
	}
	return cut, hash, int64(len(result))
}

// matterVerdict is what the matter wall makes of a call's input.
type matterVerdict int

const (
	// matterRun: the input names the run's matter at the tool's matter
	// field (or the tool takes none).
	matterRun matterVerdict = iota
	// matterOther: it names another matter there.
	matterOther
	// matterInvalid: its matter field cannot hold a matter (a parent of it
	// that is not an object, a matter that is not a string), so the wall
	// cannot tell which matter the call is for: it fails closed.
	matterInvalid
)

// withMatter puts the run's matter into a call's input at the field its
// catalog entry names, when the model left it out (and the objects above
// it, when those are missing too): the matter comes from the run, never
// from the model. The verdict is matterRun only for an input that names
// the run's matter there once filled; any other input is denied.
func (b *Brain) withMatter(tool string, input json.RawMessage, matter string) (json.RawMessage, matterVerdict) {
	t, ok := b.tools[tool]
	if !ok || t.MatterField == "" {
		return input, matterRun
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var root map[string]any
	if dec.Decode(&root) != nil || root == nil {
		return input, matterInvalid
	}
	path := catalog.Pointer(t.MatterField)
	obj := root
	for _, name := range path[:len(path)-1] {
		next, present := obj[name]
		if !present {
			child := map[string]any{}
			obj[name], obj = child, child
			continue
		}
		child, isObj := next.(map[string]any)
		if !isObj {
			return input, matterInvalid
		}
		obj = child
	}
	leaf := path[len(path)-1]
	if v, present := obj[leaf]; present {
		switch named, isString := v.(string); {
		case !isString:
			return input, matterInvalid
		case named != matter:
			return input, matterOther
		}
		return input, matterRun
	}
	obj[leaf] = matter
	out, err := json.Marshal(root)
	if err != nil {
		return input, matterInvalid
	}
	return out, matterRun
}

// ToolSchema is what counsel's editor is built from: a tool's name, its
// title for people (absent: the desk shows the name), description, input
// schema as the catalog writes it (its members in the catalog's order, the
// order the editor lays them out in) and the SHA-256 of that schema's
// canonical form (the catalog's pin), and the input member that carries the
// matter (filled by the run, not editable).
type ToolSchema struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	SchemaSHA256 string          `json:"schema_sha256"`
	MatterField  string          `json:"matter_field,omitempty"`
}

// ToolSchemas lists the brain's tools, by name.
func (b *Brain) ToolSchemas() []ToolSchema {
	out := make([]ToolSchema, 0, len(b.tools))
	for _, t := range b.tools {
		schema := t.SchemaAsWritten
		if len(schema) == 0 {
			schema = t.InputSchema
		}
		out = append(out, ToolSchema{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema,
			SchemaSHA256: t.SchemaSHA256, MatterField: t.MatterField})
	}
	slices.SortFunc(out, func(a, b ToolSchema) int { return strings.Compare(a.Name, b.Name) })
	return out
}
