package toolpolicy_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// rulesDoc is a policy with one tool of each tier and the given rules.
func rulesDoc(rules string) string {
	return `{"version":"t1","default":{"tier":"prohibited","reason":"unlisted"},"tools":{
		"read":{"tier":"low","reason":"reads","replayable":true},
		"draft":{"tier":"medium","reason":"drafts"},
		"send":{"tier":"high","reason":"sends"},
		"post":{"tier":"high","reason":"posts","sends_outside":true},
		"nuke":{"tier":"prohibited","reason":"never"}},
		"rules":` + rules + `}`
}

// leafRule is a raise:high rule on draft with one condition.
func leafRule(cond string) string {
	return `[{"id":"r","tools":["draft"],"when":[` + cond + `],"then":"raise:high","reason":"because"}]`
}

func TestLoadRejectsRules(t *testing.T) {
	good := `{"id":"ok","tools":["read"],"then":"raise:medium","reason":"r"}`
	for _, tc := range []struct {
		name, rules, path, msg string
	}{
		// Conditions.
		{"unknown op", leafRule(`{"input":"/a","op":"like","value":"x"}`), "rules[0].when[0].op", `unknown operator "like"`},
		{"unknown op in the fourth rule", `[` + good + `,` + strings.ReplaceAll(good, `"ok"`, `"ok2"`) + `,` +
			strings.ReplaceAll(good, `"ok"`, `"ok3"`) + `,{"id":"bad","tools":["read"],"when":[{"input":"/a","op":"eq","value":1}],"then":"raise:high","reason":"r"}]`,
			"rules[3].when[0].op", "unknown operator"},
		{"missing op", leafRule(`{"input":"/a","value":"x"}`), "rules[0].when[0].op", "missing"},
		{"op of the wrong type", leafRule(`{"input":"/a","op":1,"value":"x"}`), "rules[0].when[0].op", ""},
		{"unknown meta subject", leafRule(`{"meta":"client_id","op":"exists"}`), "rules[0].when[0].meta", `unknown metadata field "client_id"`},
		{"meta subject in camel case", leafRule(`{"meta":"MatterID","op":"exists"}`), "rules[0].when[0].meta", "unknown metadata field"},
		{"unknown meta comparand", leafRule(`{"input":"/a","op":"equals","meta_value":"matter"}`), "rules[0].when[0].meta_value", "unknown metadata field"},
		{"pointer without a slash", leafRule(`{"input":"a","op":"exists"}`), "rules[0].when[0].input", "RFC 6901"},
		{"pointer with ~2", leafRule(`{"input":"/a~2b","op":"exists"}`), "rules[0].when[0].input", "'~' must be followed by 0 or 1"},
		{"pointer ending in ~", leafRule(`{"input":"/a~","op":"exists"}`), "rules[0].when[0].input", "'~'"},
		{"pointer too long", leafRule(`{"input":"` + strings.Repeat("/a", 33) + `","op":"exists"}`), "rules[0].when[0].input", "at most"},
		{"invalid RE2", leafRule(`{"input":"/a","op":"matches","value":"(ab"}`), "rules[0].when[0].value", "invalid RE2 pattern: missing closing )"},
		{"backreference is not RE2", leafRule(`{"input":"/a","op":"matches","value":"(a)\\1"}`), "rules[0].when[0].value", "invalid RE2"},
		{"lookahead is not RE2", leafRule(`{"input":"/a","op":"not_matches","value":"a(?=b)"}`), "rules[0].when[0].value", "invalid RE2"},
		{"pattern is a number", leafRule(`{"input":"/a","op":"matches","value":1}`), "rules[0].when[0].value", "needs a pattern"},
		{"empty pattern", leafRule(`{"input":"/a","op":"matches","value":""}`), "rules[0].when[0].value", "needs a pattern"},
		{"pattern from metadata", leafRule(`{"input":"/a","op":"matches","meta_value":"user_id"}`), "rules[0].when[0].meta_value", "literal value"},
		{"equals an object", leafRule(`{"input":"/a","op":"equals","value":{"b":1}}`), "rules[0].when[0].value", "string, number or boolean"},
		{"equals null", leafRule(`{"input":"/a","op":"equals","value":null}`), "rules[0].when[0].value", "string, number or boolean"},
		{"equals a list field", leafRule(`{"input":"/a","op":"equals","meta_value":"roles"}`), "rules[0].when[0].meta_value", "is a list"},
		{"equals without comparand", leafRule(`{"input":"/a","op":"equals"}`), "rules[0].when[0]", "needs a value or a meta_value"},
		{"meta equals a number", leafRule(`{"meta":"user_id","op":"equals","value":7}`), "rules[0].when[0].value", "must be a string"},
		{"in a scalar", leafRule(`{"input":"/a","op":"in","value":"x"}`), "rules[0].when[0].value", "list of 1 to"},
		{"in an empty list", leafRule(`{"input":"/a","op":"not_in","value":[]}`), "rules[0].when[0].value", "list of 1 to"},
		{"in a mixed list", leafRule(`{"input":"/a","op":"in","value":["x",1]}`), "rules[0].when[0].value[1]", "all of one type"},
		{"in a list of lists", leafRule(`{"input":"/a","op":"in","value":[["x"]]}`), "rules[0].when[0].value[0]", ""},
		{"in a scalar field", leafRule(`{"input":"/a","op":"in","meta_value":"matter_id"}`), "rules[0].when[0].meta_value", "single value"},
		{"meta in numbers", leafRule(`{"meta":"roles","op":"in","value":[1,2]}`), "rules[0].when[0].value", "must be strings"},
		{"domain in upper case", leafRule(`{"input":"/to","op":"domain_in","value":["Client.com"]}`), "rules[0].when[0].value[0]", "lower-case domain"},
		{"domain with @", leafRule(`{"input":"/to","op":"domain_in","value":["@client.com"]}`), "rules[0].when[0].value[0]", "lower-case domain"},
		{"domain list empty", leafRule(`{"input":"/to","op":"domain_not_in","value":[]}`), "rules[0].when[0].value", "list of 1 to"},
		{"domains from roles", leafRule(`{"input":"/to","op":"domain_in","meta_value":"roles"}`), "rules[0].when[0].meta_value", "firm_domains or client_domains"},
		{"length_gt negative", leafRule(`{"input":"/a","op":"length_gt","value":-1}`), "rules[0].when[0].value", "non-negative integer"},
		{"length_gt fraction", leafRule(`{"input":"/a","op":"length_gt","value":1.5}`), "rules[0].when[0].value", "non-negative integer"},
		{"length_gt string", leafRule(`{"input":"/a","op":"length_gt","value":"5"}`), "rules[0].when[0].value", "non-negative integer"},
		{"length_gt from metadata", leafRule(`{"input":"/a","op":"length_gt","meta_value":"roles"}`), "rules[0].when[0].meta_value", "literal value"},
		{"sum_gt on metadata", leafRule(`{"meta":"roles","op":"sum_gt","value":1}`), "rules[0].when[0].meta", "metadata holds none"},
		{"sum_gt string", leafRule(`{"input":"/a/*","op":"sum_gt","value":"1"}`), "rules[0].when[0].value", "needs a number"},
		{"exists with a value", leafRule(`{"input":"/a","op":"exists","value":true}`), "rules[0].when[0].value", "takes no value"},
		{"missing with null", leafRule(`{"input":"/a","op":"missing","value":null}`), "rules[0].when[0].value", "takes no value"},
		{"detector with a comparand", leafRule(`{"input":"/a","op":"contains_ssn","meta_value":"user_id"}`), "rules[0].when[0].meta_value", "takes no meta_value"},
		{"two comparands", leafRule(`{"input":"/a","op":"equals","value":"x","meta_value":"user_id"}`), "rules[0].when[0]", "one comparand"},
		{"two subjects", leafRule(`{"input":"/a","meta":"user_id","op":"exists"}`), "rules[0].when[0]", "one subject"},
		{"no subject", leafRule(`{"op":"exists"}`), "rules[0].when[0]", "needs a subject"},
		{"empty condition", leafRule(`{}`), "rules[0].when[0]", "needs a subject"},
		{"leaf and group", leafRule(`{"input":"/a","op":"exists","any":[{"input":"/b","op":"exists"}]}`), "rules[0].when[0]", "one of"},
		{"two groups", leafRule(`{"any":[{"input":"/b","op":"exists"}],"all":[{"input":"/b","op":"exists"}]}`), "rules[0].when[0]", "one of"},
		{"empty any", leafRule(`{"any":[]}`), "rules[0].when[0].any", "must not be empty"},
		{"empty all", leafRule(`{"all":[]}`), "rules[0].when[0].all", "must not be empty"},
		{"nested error", leafRule(`{"any":[{"input":"/a","op":"exists"},{"not":{"input":"/b","op":"is"}}]}`), "rules[0].when[0].any[1].not.op", "unknown operator"},
		{"nested too deep", leafRule(strings.Repeat(`{"not":`, 9) + `{"input":"/a","op":"exists"}` + strings.Repeat(`}`, 9)),
			"rules[0].when[0]" + strings.Repeat(".not", 8), "nest at most"},
		{"too many conditions", leafRule(`{"any":[` + strings.TrimSuffix(strings.Repeat(`{"input":"/a","op":"exists"},`, 64), ",") + `]}`),
			"rules[0].when[0].any[63]", "at most 64 conditions"},
		{"unknown condition field", leafRule(`{"input":"/a","op":"matches","regex":"x"}`), "rules[0].when[0].regex", "unknown field"},
		// Every string of the input ("**").
		{"every string with equals", leafRule(`{"input":"**","op":"equals","value":"x"}`), "rules[0].when[0].op", `"input": "**"`},
		{"every string with not_matches", leafRule(`{"input":"**","op":"not_matches","value":"x"}`), "rules[0].when[0].op", `"input": "**"`},
		{"every string with exists", leafRule(`{"input":"**","op":"exists"}`), "rules[0].when[0].op", `"input": "**"`},
		{"a narrower detector on a tool that sends outside", `[{"id":"r","tools":["read","post"],"when":[{"any":[{"input":"**","op":"contains_ssn"},` +
			`{"not":{"input":"/body","op":"contains_ssn"}}]}],"then":"deny","reason":"r"}]`,
			"rules[0].when[0].any[1].not.input", `tool "post" sends its input outside the firm`},
		{"a detector on the whole input of a tool that sends outside", `[{"id":"r","tools":["post"],"when":[{"input":"","op":"contains_credential"}],"then":"deny","reason":"r"}]`,
			"rules[0].when[0].input", `"input": "**"`},
		// Rules.
		{"duplicate id", `[` + good + `,` + good + `]`, "rules[1].id", `duplicate rule id "ok" (also rules[0])`},
		{"id in upper case", `[{"id":"Email.x","tools":["read"],"then":"raise:high","reason":"r"}]`, "rules[0].id", "rule id must match"},
		{"id starting with a digit", `[{"id":"1x","tools":["read"],"then":"raise:high","reason":"r"}]`, "rules[0].id", "rule id must match"},
		{"empty id", `[{"id":"","tools":["read"],"then":"raise:high","reason":"r"}]`, "rules[0].id", "rule id must match"},
		{"id too long", `[{"id":"a` + strings.Repeat("b", 64) + `","tools":["read"],"then":"raise:high","reason":"r"}]`, "rules[0].id", "rule id must match"},
		{"missing id", `[{"tools":["read"],"then":"raise:high","reason":"r"}]`, "rules[0].id", "missing"},
		{"unlisted tool", `[{"id":"r","tools":["read","wire_funds"],"then":"raise:high","reason":"r"}]`, "rules[0].tools[1]", `tool "wire_funds" is not listed`},
		{"tool in another case", `[{"id":"r","tools":["Read"],"then":"raise:high","reason":"r"}]`, "rules[0].tools[0]", "not listed"},
		{"tool twice", `[{"id":"r","tools":["read","read"],"then":"raise:high","reason":"r"}]`, "rules[0].tools[1]", "listed twice"},
		{"no tools", `[{"id":"r","tools":[],"then":"raise:high","reason":"r"}]`, "rules[0].tools", "at least one tool"},
		{"null tools", `[{"id":"r","tools":null,"then":"raise:high","reason":"r"}]`, "rules[0].tools", "at least one tool"},
		{"raise to low", `[{"id":"r","tools":["read"],"then":"raise:low","reason":"r"}]`, "rules[0].then", "unknown effect"},
		{"raise to prohibited", `[{"id":"r","tools":["read"],"then":"raise:prohibited","reason":"r"}]`, "rules[0].then", "unknown effect"},
		{"allow", `[{"id":"r","tools":["read"],"then":"allow","reason":"r"}]`, "rules[0].then", "unknown effect"},
		{"lower", `[{"id":"r","tools":["send"],"then":"lower:medium","reason":"r"}]`, "rules[0].then", "unknown effect"},
		{"empty reason", `[{"id":"r","tools":["read"],"then":"deny","reason":" "}]`, "rules[0].reason", "must not be empty"},
		{"restates_floor on deny", `[{"id":"r","tools":["read"],"then":"deny","restates_floor":true,"reason":"r"}]`, "rules[0].restates_floor", "only a raise rule"},
		{"restates_floor on record", `[{"id":"r","tools":["read"],"then":"record","restates_floor":true,"reason":"r"}]`, "rules[0].restates_floor", "only a raise rule"},
		{"unknown rule field", `[{"id":"r","tools":["read"],"then":"deny","reason":"r","unless":[]}]`, "rules[0].unless", "unknown field"},
		{"rules is an object", `{}`, "rules", ""},
		// Unreachable rules.
		{"deny on a prohibited tool", `[{"id":"r","tools":["nuke"],"then":"deny","reason":"r"}]`, "rules[0].then", "every tool it lists is already prohibited"},
		{"raise on a prohibited tool", `[{"id":"r","tools":["nuke"],"then":"raise:high","reason":"r"}]`, "rules[0].then", "unreachable"},
		{"raise to the floor", `[{"id":"r","tools":["send"],"then":"raise:high","reason":"r"}]`, "rules[0].then", `set "restates_floor": true`},
		{"raise below every floor", `[{"id":"r","tools":["send","draft"],"then":"raise:medium","reason":"r"}]`, "rules[0].then", "not above the floor"},
		{"restating below the floor", `[{"id":"r","tools":["send"],"then":"raise:medium","restates_floor":true,"reason":"r"}]`, "rules[0].then", "below the floor"},
		{"restating a prohibited floor", `[{"id":"r","tools":["nuke"],"then":"raise:high","restates_floor":true,"reason":"r"}]`, "rules[0].then", "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toolpolicy.Load([]byte(rulesDoc(tc.rules)))
			if err == nil {
				t.Fatalf("Load accepted the rules (version %q)", p.Version())
			}
			if !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalidPolicy and contracts.ErrInvalid", err)
			}
			var fe *contracts.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, not a *contracts.FieldError", err)
			}
			if fe.Path != tc.path {
				t.Errorf("path = %q, want %q (err %v)", fe.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to say %q", err, tc.msg)
			}
			if !contracts.ValidPath(fe.Path) {
				t.Errorf("path %q is not a contracts path", fe.Path)
			}
		})
	}
}

func TestLoadAcceptsRules(t *testing.T) {
	for _, tc := range []struct{ name, rules string }{
		{"no rules", `[]`},
		{"record on a prohibited tool", `[{"id":"r","tools":["nuke"],"then":"record","reason":"r"}]`},
		{"record restating nothing", `[{"id":"r","tools":["send"],"when":[{"input":"/to","op":"exists"}],"then":"record","reason":"r"}]`},
		{"a floor restated deliberately", `[{"id":"r","tools":["send"],"then":"raise:high","restates_floor":true,"reason":"r"}]`},
		{"restates_floor where it raises", `[{"id":"r","tools":["read"],"then":"raise:high","restates_floor":true,"reason":"r"}]`},
		{"reachable through one tool", `[{"id":"r","tools":["send","draft","nuke"],"then":"raise:high","reason":"r"}]`},
		{"deny reachable through one tool", `[{"id":"r","tools":["nuke","read"],"then":"deny","reason":"r"}]`},
		{"raise:medium on low", `[{"id":"r","tools":["read"],"then":"raise:medium","reason":"r"}]`},
		{"every operator", `[{"id":"r","tools":["read"],"when":[
			{"input":"/a","op":"equals","value":"x"},{"input":"/a","op":"equals","value":1.5},{"input":"/a","op":"not_equals","value":true},
			{"input":"/a","op":"equals","meta_value":"matter_id"},{"meta":"user_id","op":"not_equals","meta_value":"agent_key"},
			{"input":"/a","op":"in","value":[1,2]},{"input":"/a","op":"not_in","meta_value":"roles"},
			{"input":"/a","op":"matches","value":"(?i)^x+$"},{"meta":"agent_key","op":"not_matches","value":"^intake"},
			{"input":"/to","op":"domain_in","value":["client.com","xn--bcher-kva.example"]},
			{"input":"/to","op":"domain_not_in","meta_value":"firm_domains"},{"meta":"user_id","op":"domain_in","meta_value":"client_domains"},
			{"input":"/a","op":"length_gt","value":0},{"input":"/a/*/n","op":"sum_gt","value":-1.5},
			{"input":"","op":"exists"},{"input":"/a~1b/~0c/0/-/*","op":"missing"},
			{"input":"/a","op":"contains_card_number"},{"input":"/a","op":"contains_ssn"},{"meta":"firm_id","op":"contains_credential"},
			{"input":"**","op":"contains_credential"},{"input":"**","op":"matches","value":"x"},
			{"any":[{"all":[{"not":{"input":"/a","op":"exists"}}]}]}],
			"then":"deny","reason":"r"}]`},
		{"detectors on a tool that sends outside", `[{"id":"r","tools":["post","read"],"when":[{"input":"**","op":"contains_ssn"},
			{"meta":"user_id","op":"contains_credential"},{"input":"/a","op":"matches","value":"x"}],"then":"deny","reason":"r"}]`},
		{"conditions at the limits", leafRule(strings.Repeat(`{"not":`, 8) + `{"input":"/a","op":"exists"}` + strings.Repeat(`}`, 8))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toolpolicy.Load([]byte(rulesDoc(tc.rules)))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if _, err := p.Decide(toolpolicy.Call{Tool: "read", Input: []byte(`{"a":"x"}`)}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// No "rules" member at all is the policy of before.
	if _, err := toolpolicy.Load([]byte(policyDoc(`{"t":{"tier":"low","reason":"r"}}`))); err != nil {
		t.Fatal(err)
	}
}

// outcome of a raise:high rule on draft (floor medium) for one call:
// 'T' fired, 'F' did not, 'U' fired because its conditions could not be
// evaluated (its reason says so).
func outcome(t *testing.T, p *toolpolicy.Policy, input string, meta toolpolicy.Metadata) byte {
	t.Helper()
	var in []byte
	if input != "-" {
		in = []byte(input)
	}
	d, err := p.Decide(toolpolicy.Call{Tool: "draft", Input: in, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(d.FiredRules) == 0:
		if d.Tier != toolpolicy.TierMedium || d.Action != toolpolicy.ActionAllow || d.Reason != "drafts" {
			t.Fatalf("nothing fired but the decision is %+v", d)
		}
		return 'F'
	case d.Tier != toolpolicy.TierHigh || d.Action != toolpolicy.ActionRequireApproval || d.FiredRules[0].ID != "r":
		t.Fatalf("fired, but the decision is %+v", d)
	case strings.Contains(d.FiredRules[0].Reason, "could not be evaluated"):
		if !strings.HasPrefix(d.Reason, "rule r: because (condition could not be evaluated: ") {
			t.Fatalf("reason %q", d.Reason)
		}
		return 'U'
	case d.Reason != "rule r: because" || d.FiredRules[0] != (toolpolicy.FiredRule{ID: "r", Effect: "raise:high", Reason: "because"}):
		t.Fatalf("decision %+v", d)
	}
	return 'T'
}

func TestOperators(t *testing.T) {
	meta := toolpolicy.Metadata{
		MatterID: "M-1", AgentKey: "intake", UserID: "ann@client.com", Roles: []string{"associate", "partner"},
		FirmDomains: []string{"firm.com"}, ClientDomains: []string{"client.com", "Client-Group.COM"},
	}
	type check struct {
		input string // "-" for no input
		want  byte
	}
	for _, tc := range []struct {
		cond   string
		meta   *toolpolicy.Metadata // nil: meta
		checks []check
	}{
		{`{"input":"/a","op":"equals","value":"x"}`, nil, []check{
			{`{"a":"x"}`, 'T'}, {`{"a":"\u0078"}`, 'T'}, {`{"a":"y"}`, 'F'}, {`{"a":"X"}`, 'F'}, {`{}`, 'F'}, {`{"b":"x"}`, 'F'},
			{`{"a":1}`, 'U'}, {`{"a":["x"]}`, 'U'}, {`{"a":{"x":1}}`, 'U'}, {`{"a":null}`, 'U'}, {`{"a":true}`, 'U'},
			{`{"a":"x","a":"y"}`, 'U'}, {`[]`, 'U'}, {`"x"`, 'U'}, {`{"a":"x"`, 'U'}, {`{"a":"\ud800"}`, 'U'}, {`-`, 'U'}, {``, 'U'}}},
		{`{"input":"/a","op":"equals","value":5}`, nil, []check{
			{`{"a":5}`, 'T'}, {`{"a":5.0}`, 'T'}, {`{"a":5e0}`, 'T'}, {`{"a":-5}`, 'F'}, {`{"a":"5"}`, 'U'}}},
		{`{"input":"/a","op":"equals","value":false}`, nil, []check{{`{"a":false}`, 'T'}, {`{"a":true}`, 'F'}, {`{"a":0}`, 'U'}}},
		{`{"input":"/a","op":"not_equals","value":"x"}`, nil, []check{
			{`{"a":"y"}`, 'T'}, {`{"a":"x"}`, 'F'}, {`{}`, 'F'}, {`{"a":1}`, 'U'}}},
		{`{"input":"/a","op":"equals","meta_value":"matter_id"}`, nil, []check{{`{"a":"M-1"}`, 'T'}, {`{"a":"M-2"}`, 'F'}}},
		{`{"input":"/a","op":"not_equals","meta_value":"matter_id"}`, &toolpolicy.Metadata{}, []check{
			{`{"a":"M-1"}`, 'U'}, {`{}`, 'F'}}}, // an unknown matter cannot be compared with
		{`{"input":"/a","op":"in","value":["x","y"]}`, nil, []check{{`{"a":"y"}`, 'T'}, {`{"a":"z"}`, 'F'}, {`{"a":2}`, 'U'}}},
		{`{"input":"/a","op":"not_in","value":[1,2]}`, nil, []check{{`{"a":3}`, 'T'}, {`{"a":2.0}`, 'F'}, {`{"a":"3"}`, 'U'}}},
		{`{"input":"/a","op":"in","meta_value":"roles"}`, nil, []check{{`{"a":"partner"}`, 'T'}, {`{"a":"Partner"}`, 'F'}, {`{"a":1}`, 'U'}}},
		{`{"input":"/a","op":"in","meta_value":"roles"}`, &toolpolicy.Metadata{}, []check{{`{"a":"partner"}`, 'F'}}},
		{`{"input":"/a","op":"not_in","meta_value":"roles"}`, &toolpolicy.Metadata{}, []check{{`{"a":"partner"}`, 'T'}}},
		// Any selected value will do.
		{`{"input":"/a/*","op":"equals","value":"x"}`, nil, []check{
			{`{"a":["y","x"]}`, 'T'}, {`{"a":["y"]}`, 'F'}, {`{"a":[]}`, 'F'}, {`{"a":[1,"x"]}`, 'T'}, {`{"a":[1,"y"]}`, 'U'},
			{`{"a":"x"}`, 'U'}, {`{"a":{"0":"x"}}`, 'U'}, {`{"a":null}`, 'U'}, {`{}`, 'F'}}},
		{`{"input":"/a/*","op":"not_equals","value":"x"}`, nil, []check{{`{"a":["x","x"]}`, 'F'}, {`{"a":["x","y"]}`, 'T'}}},
		{`{"input":"/a/1","op":"equals","value":"y"}`, nil, []check{
			{`{"a":["x","y"]}`, 'T'}, {`{"a":["x"]}`, 'F'}, {`{"a":{"1":"y"}}`, 'T'}, {`{"a":"xy"}`, 'U'}}},
		{`{"input":"/a/-","op":"exists"}`, nil, []check{{`{"a":[1]}`, 'F'}, {`{"a":{"-":1}}`, 'T'}}},
		{`{"input":"/a/x","op":"exists"}`, nil, []check{{`{"a":[1]}`, 'U'}, {`{"a":{"x":1}}`, 'T'}}},
		{`{"input":"/a~1b/c~0d","op":"equals","value":1}`, nil, []check{{`{"a/b":{"c~d":1}}`, 'T'}, {`{"a":{"b":{"c~d":1}}}`, 'F'}}},
		{`{"input":"/k\u00e9y","op":"equals","value":1}`, nil, []check{{`{"k\u00e9y":1}`, 'T'}, {`{"kéy":1}`, 'T'}}},
		{`{"input":"","op":"exists"}`, nil, []check{{`{}`, 'T'}, {`[]`, 'U'}}},
		{`{"input":"/a","op":"matches","value":"^ab+c$"}`, nil, []check{
			{`{"a":"abbc"}`, 'T'}, {`{"a":"ac"}`, 'F'}, {`{"a":"a\nbc"}`, 'F'}, {`{"a":1}`, 'U'}}},
		{`{"input":"/a","op":"not_matches","value":"^[0-9]+$"}`, nil, []check{{`{"a":"12a"}`, 'T'}, {`{"a":"12"}`, 'F'}}},
		{`{"input":"/to","op":"domain_in","value":["client.com"]}`, nil, []check{
			{`{"to":"a@client.com"}`, 'T'}, {`{"to":"A@CLIENT.COM"}`, 'T'}, {`{"to":"a@x.client.com"}`, 'F'}, {`{"to":"a@client.com.evil.net"}`, 'F'},
			{`{"to":"client.com"}`, 'F'}, {`{"to":["b@x.com","a@client.com"]}`, 'T'}, {`{"to":5}`, 'F'}, {`{"to":[]}`, 'F'}}},
		{`{"input":"/to","op":"domain_not_in","value":["client.com"]}`, nil, []check{
			{`{"to":"a@client.com"}`, 'F'}, {`{"to":"a@x.client.com"}`, 'T'}, {`{"to":"not an address"}`, 'T'}, {`{"to":""}`, 'T'},
			{`{"to":5}`, 'T'}, {`{"to":{"a":"b"}}`, 'T'}, {`{"to":["a@client.com","b@client.com"]}`, 'F'}, {`{"to":["a@client.com",7]}`, 'T'},
			{`{"to":[]}`, 'F'}, {`{}`, 'F'}}},
		// The metadata's own lists are compared without ASCII case.
		{`{"input":"/to","op":"domain_in","meta_value":"client_domains"}`, nil, []check{
			{`{"to":"a@client-group.com"}`, 'T'}, {`{"to":"a@firm.com"}`, 'F'}}},
		{`{"input":"/to","op":"domain_not_in","meta_value":"client_domains"}`, &toolpolicy.Metadata{}, []check{
			{`{"to":"a@client.com"}`, 'T'}}}, // no client domains: nobody is the client
		{`{"input":"/a","op":"length_gt","value":3}`, nil, []check{
			{`{"a":"abcd"}`, 'T'}, {`{"a":"abc"}`, 'F'}, {`{"a":"日本語x"}`, 'T'}, {`{"a":"日本語"}`, 'F'}, {`{"a":"\u65e5\u672c\u8a9e"}`, 'F'},
			{`{"a":[1,2,3,4]}`, 'T'}, {`{"a":[1,2,3]}`, 'F'}, {`{"a":12345}`, 'U'}, {`{"a":{"b":1,"c":2,"d":3,"e":4}}`, 'U'}}},
		{`{"input":"/a/*/n","op":"sum_gt","value":10}`, nil, []check{
			{`{"a":[{"n":5},{"n":6}]}`, 'T'}, {`{"a":[{"n":5},{"n":5}]}`, 'F'}, {`{"a":[{"n":5},{}]}`, 'F'}, {`{"a":[{"n":11}]}`, 'T'},
			{`{"a":[]}`, 'F'}, {`{}`, 'F'}, {`{"a":[{"n":5},{"n":"6"}]}`, 'U'}, {`{"a":[{"n":5},"x"]}`, 'U'}, {`{"a":[{"n":1e400}]}`, 'T'}, // beyond a double: +Inf, above any limit
			{`{"a":[{"n":1e300},{"n":1e300}]}`, 'T'}, {`{"a":[{"n":-20},{"n":25}]}`, 'F'}}},
		{`{"input":"/a/b","op":"exists"}`, nil, []check{{`{"a":{"b":null}}`, 'T'}, {`{"a":{}}`, 'F'}, {`{"a":1}`, 'U'}, {`{}`, 'F'}}},
		{`{"input":"/a/b","op":"missing"}`, nil, []check{{`{"a":{}}`, 'T'}, {`{}`, 'T'}, {`{"a":{"b":1}}`, 'F'}, {`{"a":"b"}`, 'U'}}},
		{`{"input":"/a","op":"contains_card_number"}`, nil, []check{{`{"a":"4111 1111 1111 1111"}`, 'T'}, {`{"a":"4111 1111"}`, 'F'}, {`{"a":4111111111111111}`, 'U'}}},
		{`{"input":"/a","op":"contains_ssn"}`, nil, []check{{`{"a":"SSN 123-45-6789"}`, 'T'}, {`{"a":"123-45-678"}`, 'F'}}},
		{`{"input":"/a","op":"contains_credential"}`, nil, []check{{`{"a":"password=hunter22"}`, 'T'}, {`{"a":"password"}`, 'F'}}},
		// Every string of the input: member names, string values (decoded)
		// and numbers' text, at any depth.
		{`{"input":"**","op":"contains_ssn"}`, nil, []check{
			{`{"a":"SSN 123-45-6789"}`, 'T'}, {`{"a":{"b":["x","123-45-6789"]}}`, 'T'}, {`{"123-45-6789":1}`, 'T'},
			{`{"a":[{"SSN 123-45-6789":null}]}`, 'T'}, {`{"a":"\u0031\u0032\u0033-45-6789"}`, 'T'}, {`{"\u0031\u0032\u0033-45-6789":1}`, 'T'},
			{`{"a":"x","a":"123-45-6789"}`, 'T'}, {`{"a":123456789}`, 'F'}, {`{"a":"123-45-678"}`, 'F'}, {`{"a":true,"b":null}`, 'F'},
			{`{}`, 'F'}, {`[]`, 'U'}, {`-`, 'U'}, {`{"a":"123-45-6789"`, 'U'}}},
		{`{"input":"**","op":"contains_card_number"}`, nil, []check{
			{`{"a":4111111111111111}`, 'T'}, {`{"a":[[4111111111111111]]}`, 'T'}, {`{"a":"4111 1111"}`, 'F'}}},
		{`{"input":"**","op":"matches","value":"^secret$"}`, nil, []check{{`{"secret":1}`, 'T'}, {`{"a":"secret"}`, 'T'}, {`{"a":"no"}`, 'F'}}},
		// Metadata subjects.
		{`{"meta":"agent_key","op":"equals","value":"intake"}`, nil, []check{{`{}`, 'T'}, {`-`, 'T'}}},
		{`{"meta":"agent_key","op":"not_equals","value":"intake"}`, nil, []check{{`{}`, 'F'}}},
		{`{"meta":"agent_key","op":"equals","value":"intake"}`, &toolpolicy.Metadata{}, []check{{`{}`, 'U'}}},
		{`{"meta":"user_id","op":"not_equals","meta_value":"agent_key"}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"roles","op":"in","value":["partner"]}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"roles","op":"in","value":["partner"]}`, &toolpolicy.Metadata{}, []check{{`{}`, 'F'}}},
		{`{"meta":"roles","op":"in","meta_value":"roles"}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"user_id","op":"exists"}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"user_id","op":"missing"}`, &toolpolicy.Metadata{}, []check{{`{}`, 'T'}}},
		{`{"meta":"roles","op":"missing"}`, &toolpolicy.Metadata{Roles: []string{}}, []check{{`{}`, 'T'}}},
		{`{"meta":"user_id","op":"domain_in","meta_value":"client_domains"}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"user_id","op":"domain_not_in","value":["client.com"]}`, nil, []check{{`{}`, 'F'}}},
		{`{"meta":"user_id","op":"matches","value":"^ann@"}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"agent_key","op":"length_gt","value":5}`, nil, []check{{`{}`, 'T'}}},
		{`{"meta":"user_id","op":"contains_credential"}`, nil, []check{{`{}`, 'F'}}},
		// Groups, with Kleene's logic for what cannot be evaluated.
		{`{"any":[{"input":"/a","op":"equals","value":"x"},{"input":"/b","op":"equals","value":"y"}]}`, nil, []check{
			{`{"a":"x"}`, 'T'}, {`{"b":"y"}`, 'T'}, {`{"a":"z","b":"z"}`, 'F'}, {`{"a":1,"b":"y"}`, 'T'}, {`{"a":1,"b":"z"}`, 'U'}}},
		{`{"all":[{"input":"/a","op":"equals","value":"x"},{"input":"/b","op":"equals","value":"y"}]}`, nil, []check{
			{`{"a":"x","b":"y"}`, 'T'}, {`{"a":"x"}`, 'F'}, {`{"a":1,"b":"z"}`, 'F'}, {`{"a":1,"b":"y"}`, 'U'}}},
		{`{"not":{"input":"/a","op":"equals","value":"x"}}`, nil, []check{{`{"a":"x"}`, 'F'}, {`{"a":"y"}`, 'T'}, {`{}`, 'T'}, {`{"a":1}`, 'U'}}},
	} {
		m := meta
		if tc.meta != nil {
			m = *tc.meta
		}
		p, err := toolpolicy.Load([]byte(rulesDoc(leafRule(tc.cond))))
		if err != nil {
			t.Fatalf("%s: %v", tc.cond, err)
		}
		for _, c := range tc.checks {
			if got := outcome(t, p, c.input, m); got != c.want {
				t.Errorf("%s on %s: %c, want %c", tc.cond, c.input, got, c.want)
			}
		}
	}
}

// The conditions of a rule all hold (when is a conjunction), and when
// they cannot be evaluated the reason says why.
func TestWhenIsAConjunction(t *testing.T) {
	p, err := toolpolicy.Load([]byte(rulesDoc(leafRule(`{"input":"/a","op":"exists"},{"input":"/b/c","op":"exists"}`))))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		input string
		want  byte
		cause string
	}{
		{`{"a":1,"b":{"c":1}}`, 'T', ""},
		{`{"a":1}`, 'F', ""},
		{`{"b":{"c":1}}`, 'F', ""},
		{`{"a":1,"b":[]}`, 'U', "the input's structure does not fit the rule's JSON pointer"},
		{`{"a":1,"b":{"c":1,"c":2}}`, 'U', "the input has a duplicate key on the rule's JSON pointer"},
		{`{"a":1,"b":{"c":"\ud800"}}`, 'U', "the input is not a valid JSON object"},
		{`-`, 'U', "the call has no input"},
	} {
		if got := outcome(t, p, c.input, toolpolicy.Metadata{}); got != c.want {
			t.Errorf("%s: %c, want %c", c.input, got, c.want)
		}
		if c.cause != "" {
			var in []byte
			if c.input != "-" {
				in = []byte(c.input)
			}
			d, _ := p.Decide(toolpolicy.Call{Tool: "draft", Input: in})
			if want := "because (condition could not be evaluated: " + c.cause + "; treated as fired, fail-closed)"; d.FiredRules[0].Reason != want {
				t.Errorf("%s: reason %q, want %q", c.input, d.FiredRules[0].Reason, want)
			}
		}
	}
}

func TestDecideSemantics(t *testing.T) {
	p, err := toolpolicy.Load([]byte(rulesDoc(`[
		{"id":"q.secret","tools":["read","draft"],"when":[{"input":"/q","op":"matches","value":"secret"}],"then":"raise:medium","reason":"secret query"},
		{"id":"q.very","tools":["read","draft"],"when":[{"input":"/q","op":"matches","value":"very"}],"then":"raise:high","reason":"very secret query"},
		{"id":"q.note","tools":["read"],"when":[{"input":"/note","op":"exists"}],"then":"record","reason":"has a note"},
		{"id":"q.mild","tools":["read","draft"],"when":[{"input":"/q","op":"matches","value":"mild"}],"then":"raise:medium","reason":"mild"},
		{"id":"q.banned","tools":["read","send","nuke"],"when":[{"input":"/q","op":"equals","value":"banned"}],"then":"deny","reason":"banned query"},
		{"id":"nuke.seen","tools":["nuke"],"then":"record","reason":"nuke asked for"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	fired := func(ids ...string) []string { return ids }
	for _, tc := range []struct {
		tool, input string
		tier        toolpolicy.Tier
		reason      string
		fired       []string
		replayable  bool
	}{
		{"read", `{"q":"hello"}`, toolpolicy.TierLow, "reads", nil, true},
		{"read", `{"q":"hello","note":"x"}`, toolpolicy.TierLow, "reads", fired("q.note"), false},
		{"read", `{"q":"secret"}`, toolpolicy.TierMedium, "rule q.secret: secret query", fired("q.secret"), false},
		{"read", `{"q":"very secret"}`, toolpolicy.TierHigh, "rule q.very: very secret query", fired("q.secret", "q.very"), false},
		// A later, lower raise changes nothing but the record.
		{"read", `{"q":"very mild"}`, toolpolicy.TierHigh, "rule q.very: very secret query", fired("q.very", "q.mild"), false},
		{"read", `{"q":"banned"}`, toolpolicy.TierProhibited, "rule q.banned: banned query", fired("q.banned"), false},
		{"draft", `{"q":"secret"}`, toolpolicy.TierMedium, "drafts", fired("q.secret"), false}, // already medium: no new reason
		{"draft", `{"q":"very"}`, toolpolicy.TierHigh, "rule q.very: very secret query", fired("q.very"), false},
		{"send", `{"q":"very"}`, toolpolicy.TierHigh, "sends", nil, false},
		{"send", `{"q":"banned"}`, toolpolicy.TierProhibited, "rule q.banned: banned query", fired("q.banned"), false},
		// A prohibited tool keeps its own reason; rules only add records.
		{"nuke", `{"q":"banned"}`, toolpolicy.TierProhibited, "never", fired("q.banned", "nuke.seen"), false},
		// Rules never apply to unlisted tools.
		{"wire_funds", `{"q":"banned"}`, toolpolicy.TierProhibited, "unlisted", nil, false},
	} {
		d, err := p.Decide(toolpolicy.Call{Tool: tc.tool, Input: []byte(tc.input)})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range d.FiredRules {
			ids = append(ids, r.ID)
		}
		action := map[toolpolicy.Tier]toolpolicy.Action{toolpolicy.TierLow: toolpolicy.ActionAllow, toolpolicy.TierMedium: toolpolicy.ActionAllow,
			toolpolicy.TierHigh: toolpolicy.ActionRequireApproval, toolpolicy.TierProhibited: toolpolicy.ActionDeny}[tc.tier]
		matched := "tools." + tc.tool
		if tc.tool == "wire_funds" {
			matched = "default"
		}
		if d.Tier != tc.tier || d.Action != action || d.Reason != tc.reason || !reflect.DeepEqual(ids, tc.fired) ||
			d.Replayable != tc.replayable || d.MatchedPolicy != matched || d.PolicyVersion != "t1" || d.ToolName != tc.tool {
			t.Errorf("%s %s: %+v\nwant tier %s, reason %q, fired %v, replayable %v", tc.tool, tc.input, d, tc.tier, tc.reason, tc.fired, tc.replayable)
		}
	}
	d, _ := p.Decide(toolpolicy.Call{Tool: "read", Input: []byte(`{"q":"very"}`)})
	if want := (toolpolicy.FiredRule{ID: "q.very", Effect: "raise:high", Reason: "very secret query"}); d.FiredRules[0] != want {
		t.Errorf("fired rule %+v, want %+v", d.FiredRules[0], want)
	}
	if _, err := p.Decide(toolpolicy.Call{Tool: "read tool"}); !errors.Is(err, toolpolicy.ErrInvalidToolName) {
		t.Errorf("err = %v", err)
	}
	var nilPolicy *toolpolicy.Policy
	if _, err := nilPolicy.Decide(toolpolicy.Call{Tool: "read"}); err == nil {
		t.Error("a nil policy decided")
	}
}

// A decision never allows more than the tool's floor, whatever the input.
func TestRulesNeverLowerTheFloor(t *testing.T) {
	p, err := toolpolicy.Load([]byte(rulesDoc(`[{"id":"r","tools":["read","draft","send","nuke"],
		"when":[{"input":"/a","op":"exists"}],"then":"raise:medium","reason":"r"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	floors := map[string]toolpolicy.Tier{"read": "low", "draft": "medium", "send": "high", "nuke": "prohibited"}
	for tool, floor := range floors {
		for _, in := range []string{`{}`, `{"a":1}`, `[]`, ``} {
			d, err := p.Decide(toolpolicy.Call{Tool: tool, Input: []byte(in)})
			if err != nil {
				t.Fatal(err)
			}
			if rank(d.Tier) < rank(floor) {
				t.Errorf("%s %s: tier %s below the floor %s", tool, in, d.Tier, floor)
			}
		}
	}
}

func rank(t toolpolicy.Tier) int {
	return map[toolpolicy.Tier]int{"low": 0, "medium": 1, "high": 2, "prohibited": 3}[t]
}

// The reason of a rule fired undecided names the condition that left it
// undecided, not one whose outcome did not matter.
func TestUndecidedReasonNamesTheCause(t *testing.T) {
	p, err := toolpolicy.Load([]byte(rulesDoc(leafRule(
		`{"any":[{"input":"/a","op":"equals","value":"x"},{"input":"/b","op":"exists"}]},{"input":"/c/d","op":"exists"}`))))
	if err != nil {
		t.Fatal(err)
	}
	for in, cause := range map[string]string{
		`{"a":1,"b":1,"c":[]}`:   "the input's structure does not fit the rule's JSON pointer",
		`{"a":1,"c":{"d":1}}`:    "an input value has another JSON type than the rule compares",
		`{"a":1,"c":{"e":1}}`:    "", // an undecided any, but the conjunction is false
		`{"a":"x","c":{"d":1}}`:  "",
		`{"a":["x"],"c":"text"}`: "an input value has another JSON type than the rule compares",
	} {
		d, err := p.Decide(toolpolicy.Call{Tool: "draft", Input: []byte(in)})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case cause == "" && len(d.FiredRules) == 1 && strings.Contains(d.FiredRules[0].Reason, "could not be evaluated"):
			t.Errorf("%s: %q", in, d.FiredRules[0].Reason)
		case cause != "" && (len(d.FiredRules) != 1 || !strings.Contains(d.FiredRules[0].Reason, "evaluated: "+cause+";")):
			t.Errorf("%s: %+v, want the cause %q", in, d.FiredRules, cause)
		}
	}
}
