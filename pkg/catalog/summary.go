package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// A summary is a Go text/template over the call's input: "File {{quote
// .document_title}} with {{.court}}." The input's members are the
// template's data, every string among them escaped with contracts.Printable
// before the template sees it, so no field can hide or reorder the words
// around it whatever the template does with it. Functions: quote (“…”),
// join (a list, a separator), count (a list's length). A member the
// template names that the input lacks is an error (missingkey=error): an
// optional member is read with index (`{{with index . "cc"}}…{{end}}`). A
// template that fails on an input gives a fixed fallback, never the input.
type summaryTemplate struct {
	t *template.Template
}

// MaxSummary bounds a summary, in characters.
const MaxSummary = 1000

var summaryFuncs = template.FuncMap{
	"quote": func(v any) string { return "“" + fmt.Sprint(v) + "”" },
	"join": func(v any, sep string) string {
		list, _ := v.([]any)
		parts := make([]string, 0, len(list))
		for _, e := range list {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, sep)
	},
	"count": func(v any) int {
		list, _ := v.([]any)
		return len(list)
	},
}

func parseSummary(src string) (*summaryTemplate, error) {
	if src == "" || len(src) > 2000 {
		return nil, &Error{Reason: "1 to 2000 bytes"}
	}
	t, err := template.New("summary").Funcs(summaryFuncs).Option("missingkey=error").Parse(src)
	if err != nil {
		// The parser's message quotes the template: a detail, not the reason.
		return nil, &Error{Reason: "not a template", Detail: err.Error()}
	}
	return &summaryTemplate{t: t}, nil
}

// Summarize is the one line counsel reads about a call with this input.
func (t Tool) Summarize(input json.RawMessage) string {
	fallback := "Call " + t.Name + " (see its arguments)."
	if t.summary == nil {
		return fallback
	}
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if dec.Decode(&data) != nil {
		return fallback
	}
	var b strings.Builder
	if err := t.summary.t.Execute(&b, escaped(data)); err != nil {
		return fallback
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if utf8.RuneCountInString(s) > MaxSummary {
		s = string([]rune(s)[:MaxSummary-1]) + "…"
	}
	return s
}

// escaped is v with every string (member names included) made printable.
func escaped(v any) any {
	switch x := v.(type) {
	case string:
		return contracts.Printable(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[contracts.Printable(k)] = escaped(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = escaped(e)
		}
		return out
	}
	return v
}
