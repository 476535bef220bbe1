package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// The configuration documents, each by the variable that names its source.
const (
	DocCatalog = "TOOL_CATALOG"
	DocAgents  = "AGENTS"
	DocPolicy  = "TOOL_POLICY"
)

// Document is a configuration document as read from its source: the tool
// catalog, the agents or the risk policy. Its loaders (Catalog, Agents,
// Policy) are the functions' own; what they refuse is a *DocumentError
// naming the document, the field and its line and column.
type Document struct {
	// Variable is DocCatalog, DocAgents or DocPolicy.
	Variable string
	// Source is where the document was read, as the variable names it:
	// "file:<path>" or "ssm:<parameter name>"; "" for the embedded one.
	Source string
	Data   []byte
}

// Name is the document as a fault names it: its variable and its source,
// "TOOL_CATALOG (file:/opt/catalog.json)".
func (d Document) Name() string {
	if d.Source == "" {
		return d.Variable + " (the embedded document)"
	}
	return d.Variable + " (" + d.Source + ")"
}

// DocumentError is a configuration document that does not load, or that
// does not agree with another: the document, the field (its JSON path) and
// where it is (line and column, 1-based; 0 when unknown), and why. Error()
// holds no value of the document (it may name members, agents and tools,
// never what a member holds), so it is what the function logs in its
// failure envelope and answers API requests with on AWS; Local() adds the
// loader's own words, which may quote the document, for the operator's
// terminal (the local stack, warrant config check).
type DocumentError struct {
	Variable, Source string
	Field            string
	Line, Column     int
	// Reason is a fixed text or names only members, agents and tools.
	Reason string
	// Detail is the loader's own message when Reason leaves something out
	// (it may quote the document): never logged on AWS.
	Detail string
}

func (e *DocumentError) Error() string {
	var b strings.Builder
	b.WriteString(Document{Variable: e.Variable, Source: e.Source}.Name())
	b.WriteString(": ")
	if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column) + ": ")
	}
	if e.Field != "" {
		b.WriteString("field " + e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Local is Error() with the loader's own words, for a terminal: in place
// of a reason that only stood in for them, else after the reason.
func (e *DocumentError) Local() string {
	switch {
	case e.Detail == "":
		return e.Error()
	case e.Reason == notAccepted:
		local := *e
		local.Reason, local.Detail = e.Detail, ""
		return local.Error()
	}
	return e.Error() + " (" + e.Detail + ")"
}

// notAccepted stands in for a loader's reason that quotes the document.
const notAccepted = "the value is not accepted here (warrant config check prints why)"

// FailureKind is config_invalid.
func (e *DocumentError) FailureKind() failure.Kind { return failure.KindConfigInvalid }

// Failure is the fault as the functions raise it: config_invalid, its
// message (the problem's detail, the envelope's user_visible_message) the
// fault's Error(), which names no value of the document.
func (e *DocumentError) Failure() error { return failure.Wrap(failure.KindConfigInvalid, e.Error(), e) }

// Catalog loads the document as a tool catalog (catalog.Parse).
func (d Document) Catalog() (*catalog.Catalog, error) {
	c, err := catalog.Parse(d.Data)
	if err != nil {
		return nil, d.Fault(err).Failure()
	}
	return c, nil
}

// Agents loads the document as an agents document (catalog.ParseAgents);
// readFile reads a system_prompt_file.
func (d Document) Agents(readFile func(name string) ([]byte, error)) (*catalog.Agents, error) {
	a, err := catalog.ParseAgents(d.Data, readFile)
	if err != nil {
		return nil, d.Fault(err).Failure()
	}
	return a, nil
}

// Policy loads the document as a risk policy, whole or an overlay of the
// embedded one (toolpolicy.LoadDocument).
func (d Document) Policy() (*toolpolicy.Policy, error) {
	p, err := toolpolicy.LoadDocument(d.Data)
	if err != nil {
		return nil, d.Fault(err).Failure()
	}
	return p, nil
}

// Fault is the DocumentError of a loader's error on the document: a syntax
// error where it is (found by reading the document again, not from the
// error), else the field the error names, located in the document.
func (d Document) Fault(err error) *DocumentError {
	e := &DocumentError{Variable: d.Variable, Source: d.Source}
	if syntax := checkSyntax(d.Data); syntax != nil {
		e.Field, e.Reason = syntax.path, syntax.reason
		e.Line, e.Column = lineCol(d.Data, syntax.at)
		return e
	}
	var ce *catalog.Error
	var fe *contracts.FieldError
	switch {
	case errors.As(err, &ce):
		// The catalog's reasons are fixed texts; its detail may quote.
		e.Field, e.Reason, e.Detail = ce.Path, ce.Reason, ce.Detail
	case errors.As(err, &fe):
		e.Field, e.Reason = fe.Path, fe.Reason
		if !safeReason(fe.Reason) {
			e.Reason, e.Detail = notAccepted, fe.Reason
		}
	default:
		e.Reason = "does not load"
		if err != nil {
			e.Detail = err.Error()
		}
	}
	if !contracts.ValidPath(e.Field) {
		// A path naming a key no field name looks like: keep its valid
		// head, the object the key is in.
		e.Field = validHead(e.Field)
	}
	if at, ok := locate(d.Data, e.Field, e.Reason == "duplicate key"); ok && e.Field != "" {
		e.Line, e.Column = lineCol(d.Data, at)
	}
	return e
}

// At is a fault of the document at field (located in the document when it
// is there): reason names no value, detail (for a terminal) may.
func (d Document) At(field, reason, detail string) *DocumentError {
	e := &DocumentError{Variable: d.Variable, Source: d.Source, Field: field, Reason: reason, Detail: detail}
	if checkSyntax(d.Data) == nil {
		if at, ok := locate(d.Data, field, false); ok {
			e.Line, e.Column = lineCol(d.Data, at)
		}
	}
	return e
}

// safeReason reports whether a loader's reason can be shown on AWS: the
// strict decoder's and the policy's fixed texts can, but a reason quoting
// what the document holds ("unknown tier \"...\"") cannot, and a byte
// offset is replaced by the line and column.
func safeReason(r string) bool {
	return !strings.ContainsAny(r, "\"'`") && !strings.Contains(r, " at byte ")
}

// validHead is the longest head of path that contracts.ValidPath takes.
func validHead(path string) string {
	for i := len(path) - 1; i > 0; i-- {
		if (path[i] == '.' || path[i] == '[') && contracts.ValidPath(path[:i]) {
			return path[:i]
		}
	}
	return ""
}
