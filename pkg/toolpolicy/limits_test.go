package toolpolicy_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// limitsDoc is rulesDoc's tools, one rule (draft.big) and the given limits.
func limitsDoc(limits string) string {
	return `{"version":"t1","default":{"tier":"prohibited","reason":"unlisted"},"tools":{
		"read":{"tier":"low","reason":"reads","replayable":true},
		"draft":{"tier":"medium","reason":"drafts"},
		"mail":{"tier":"medium","reason":"mails","sends_outside":true},
		"send":{"tier":"high","reason":"sends"},
		"nuke":{"tier":"prohibited","reason":"never"}},
		"rules":[{"id":"draft.big","tools":["draft"],"when":[{"input":"/body","op":"length_gt","value":100}],"then":"raise:high","reason":"a long draft"}],
		"limits":` + limits + `}`
}

// aLimit is a limit on draft with the given member replaced (or, with
// value "", removed).
func aLimit(member, value string) string {
	m := map[string]string{"id": `"drafts.per_matter_day"`, "tools": `["draft"]`, "per": `"matter"`, "window": `"day"`,
		"max": `2`, "then": `"deny"`, "reason": `"two drafts a day"`}
	if value == "" {
		delete(m, member)
	} else {
		m[member] = value
	}
	var b strings.Builder
	b.WriteString("{")
	first := true
	for _, k := range []string{"id", "tools", "when", "per", "window", "max", "then", "reason", "extra"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString(`"` + k + `":` + v)
	}
	return b.String() + "}"
}

// Issue 29 item 2: a limit the policy cannot enforce as written is refused
// at load, naming the limit and the field.
func TestLoadRejectsLimits(t *testing.T) {
	for _, tc := range []struct {
		name, limits, path, msg string
	}{
		{"unknown tool", `[` + aLimit("tools", `["draft","wire_funds"]`) + `]`, "limits[0].tools[1]", `tool "wire_funds" is not listed`},
		{"no tools", `[` + aLimit("tools", `[]`) + `]`, "limits[0].tools", "at least one tool"},
		{"tool twice", `[` + aLimit("tools", `["draft","draft"]`) + `]`, "limits[0].tools[1]", "listed twice"},
		{"unknown per", `[` + aLimit("per", `"client"`) + `]`, "limits[0].per", `unknown scope "client"`},
		{"missing per", `[` + aLimit("per", "") + `]`, "limits[0].per", "missing"},
		{"unknown window", `[` + aLimit("window", `"week"`) + `]`, "limits[0].window", `unknown window "week"`},
		{"missing window", `[` + aLimit("window", "") + `]`, "limits[0].window", "missing"},
		{"missing max", `[` + aLimit("max", "") + `]`, "limits[0].max", "a limit needs a bound"},
		{"max 0", `[` + aLimit("max", `0`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max negative", `[` + aLimit("max", `-3`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max 1.5", `[` + aLimit("max", `1.5`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max 2.0", `[` + aLimit("max", `2.0`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max 1e3", `[` + aLimit("max", `1e3`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max a string", `[` + aLimit("max", `"5"`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max null", `[` + aLimit("max", `null`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"max too big", `[` + aLimit("max", `10000000000`) + `]`, "limits[0].max", "a limit needs a bound"},
		{"bad pointer in when", `[` + aLimit("when", `[{"input":"to","op":"exists"}]`) + `]`, "limits[0].when[0].input", "RFC 6901"},
		{"unknown op in when", `[` + aLimit("when", `[{"input":"/to","op":"like","value":"x"}]`) + `]`, "limits[0].when[0].op", "unknown operator"},
		{"a narrower detector on a tool that sends outside", `[{"id":"m","tools":["mail"],"when":[{"input":"/body","op":"contains_ssn"}],` +
			`"per":"run","window":"hour","max":1,"then":"deny","reason":"r"}]`, "limits[0].when[0].input", "sends its input outside the firm"},
		{"duplicate id with a rule", `[` + aLimit("id", `"draft.big"`) + `]`, "limits[0].id", `duplicate id "draft.big" (also rules[0])`},
		{"duplicate limit id", `[` + aLimit("per", `"run"`) + `,` + aLimit("per", `"firm"`) + `]`, "limits[1].id", "duplicate limit id"},
		{"id in upper case", `[` + aLimit("id", `"Drafts"`) + `]`, "limits[0].id", "limit id must match"},
		{"unknown then", `[` + aLimit("then", `"raise:medium"`) + `]`, "limits[0].then", `unknown effect "raise:medium"`},
		{"record", `[` + aLimit("then", `"record"`) + `]`, "limits[0].then", "unknown effect"},
		{"empty reason", `[` + aLimit("reason", `" "`) + `]`, "limits[0].reason", "must not be empty"},
		{"unknown field", `[` + aLimit("extra", `1`) + `]`, "limits[0].extra", "unknown field"},
		{"unreachable: high and prohibited tools", `[` + aLimit("tools", `["send","nuke"]`) + `]`, "limits[0].tools", "unreachable limit"},
		{"limits is an object", `{}`, "limits", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toolpolicy.Load([]byte(limitsDoc(tc.limits)))
			if err == nil {
				t.Fatalf("Load accepted the limits (version %q)", p.Version())
			}
			wantFieldErr(t, err, tc.path, tc.msg)
		})
	}
	t.Run("an overlay adding limits", func(t *testing.T) {
		_, err := toolpolicy.LoadDocument([]byte(`{"extends":"embedded","version":"firm-7","limits":[` + aLimit("max", "2") + `]}`))
		if err == nil {
			t.Fatal("an overlay added a limit")
		}
		wantFieldErr(t, err, "limits", "an overlay cannot add limits")
	})
	t.Run("an overlay disabling a limit the embedded policy lacks", func(t *testing.T) {
		_, err := toolpolicy.LoadDocument([]byte(`{"extends":"embedded","version":"firm-7","disable":["drafts.per_matter_day"]}`))
		wantFieldErr(t, err, "disable[0]", `no rule "drafts.per_matter_day"`)
	})
}

func wantFieldErr(t *testing.T, err error, path, msg string) {
	t.Helper()
	if !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalidPolicy and contracts.ErrInvalid", err)
	}
	var fe *contracts.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, not a *contracts.FieldError", err)
	}
	if fe.Path != path {
		t.Errorf("path = %q, want %q (err %v)", fe.Path, path, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("err = %v, want it to say %q", err, msg)
	}
}

// Decide reports the limits that count a call and leaves the tier alone; a
// limit whose conditions cannot be evaluated counts the call (fail closed).
func TestDecideChargesLimits(t *testing.T) {
	p, err := toolpolicy.Load([]byte(limitsDoc(`[
		{"id":"mail.outside_client","tools":["mail"],"when":[{"input":"/to","op":"domain_not_in","meta_value":"client_domains"}],
		 "per":"matter","window":"day","max":5,"then":"raise:high","reason":"five e-mails outside the client a day"},
		{"id":"mail.per_run_hour","tools":["mail","draft"],"per":"run","window":"hour","max":20,"then":"deny","reason":"twenty an hour"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.LimitIDs(); !reflect.DeepEqual(got, []string{"mail.outside_client", "mail.per_run_hour"}) {
		t.Errorf("LimitIDs = %v", got)
	}
	outside := toolpolicy.LimitCharge{ID: "mail.outside_client", Per: "matter", Window: "day", Max: 5, Then: "raise:high", Reason: "five e-mails outside the client a day"}
	perRun := toolpolicy.LimitCharge{ID: "mail.per_run_hour", Per: "run", Window: "hour", Max: 20, Then: "deny", Reason: "twenty an hour"}
	meta := toolpolicy.Metadata{MatterID: "m-1", ClientDomains: []string{"client.example"}}
	for _, tc := range []struct {
		name  string
		call  toolpolicy.Call
		want  []toolpolicy.LimitCharge
		tier  toolpolicy.Tier
		fired []string
	}{
		{"outside the client", toolpolicy.Call{Tool: "mail", Input: json.RawMessage(`{"to":"x@other.example"}`), Meta: meta},
			[]toolpolicy.LimitCharge{outside, perRun}, toolpolicy.TierMedium, nil},
		{"to the client", toolpolicy.Call{Tool: "mail", Input: json.RawMessage(`{"to":"x@client.example"}`), Meta: meta},
			[]toolpolicy.LimitCharge{perRun}, toolpolicy.TierMedium, nil},
		{"input not an object: counted", toolpolicy.Call{Tool: "mail", Input: json.RawMessage(`[1]`), Meta: meta},
			[]toolpolicy.LimitCharge{outside, perRun}, toolpolicy.TierMedium, nil},
		{"no input: counted", toolpolicy.Call{Tool: "mail", Meta: meta}, []toolpolicy.LimitCharge{outside, perRun}, toolpolicy.TierMedium, nil},
		{"recipient of the wrong type: counted", toolpolicy.Call{Tool: "mail", Input: json.RawMessage(`{"to":7}`), Meta: meta},
			[]toolpolicy.LimitCharge{outside, perRun}, toolpolicy.TierMedium, nil},
		{"another tool of the second limit, raised by a rule", toolpolicy.Call{Tool: "draft", Input: json.RawMessage(`{"body":"` + strings.Repeat("x", 101) + `"}`)},
			[]toolpolicy.LimitCharge{perRun}, toolpolicy.TierHigh, []string{"draft.big"}},
		{"a tool no limit lists", toolpolicy.Call{Tool: "read", Input: json.RawMessage(`{}`)}, nil, toolpolicy.TierLow, nil},
		{"an unlisted tool", toolpolicy.Call{Tool: "wire_funds", Input: json.RawMessage(`{}`)}, nil, toolpolicy.TierProhibited, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := p.Decide(tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.Limits, tc.want) {
				t.Errorf("Limits = %+v, want %+v", d.Limits, tc.want)
			}
			if d.Tier != tc.tier || !reflect.DeepEqual(ruleIDsOf(d.FiredRules), tc.fired) {
				t.Errorf("tier %s, fired %v; want %s, %v (a charge does not change the decision)", d.Tier, ruleIDsOf(d.FiredRules), tc.tier, tc.fired)
			}
		})
	}
	d, _ := p.Decide(toolpolicy.Call{Tool: "mail", Input: json.RawMessage(`{"to":"x@other.example"}`), Meta: meta})
	if b, _ := json.Marshal(d); !strings.Contains(string(b), `"limits":[{"id":"mail.outside_client","per":"matter","window":"day","max":5,"then":"raise:high"`) {
		t.Errorf("the decision's JSON does not show its charges: %s", b)
	}
}

func ruleIDsOf(rules []toolpolicy.FiredRule) []string {
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return ids
}

// A call that found a limit at its bound is decided with it reached: a
// fired rule of the limit, the tier raised or the call denied.
func TestLimitsReached(t *testing.T) {
	p, err := toolpolicy.Load([]byte(limitsDoc(`[
		` + aLimit("then", `"raise:high"`) + `,
		{"id":"drafts.per_run","tools":["draft"],"per":"run","window":"hour","max":9,"then":"deny","reason":"nine an hour"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decide(toolpolicy.Call{Tool: "draft", Input: json.RawMessage(`{"body":"short"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != toolpolicy.TierMedium || len(d.Limits) != 2 {
		t.Fatalf("decision %+v", d)
	}
	held, err := d.LimitsReached([]string{"drafts.per_matter_day"})
	if err != nil {
		t.Fatal(err)
	}
	want := toolpolicy.FiredRule{ID: "drafts.per_matter_day", Effect: "raise:high", Reason: "two drafts a day (limit: at most 2 per matter per day; reached)"}
	if held.Tier != toolpolicy.TierHigh || held.Action != toolpolicy.ActionRequireApproval || len(held.FiredRules) != 1 || held.FiredRules[0] != want ||
		held.Reason != "rule drafts.per_matter_day: "+want.Reason || held.Replayable {
		t.Errorf("raise:high reached: %+v", held)
	}
	if len(d.FiredRules) != 0 || d.Tier != toolpolicy.TierMedium {
		t.Errorf("LimitsReached changed the decision it was given: %+v", d)
	}
	denied, err := d.LimitsReached([]string{"drafts.per_run", "drafts.per_matter_day"})
	if err != nil {
		t.Fatal(err)
	}
	if denied.Tier != toolpolicy.TierProhibited || denied.Action != toolpolicy.ActionDeny ||
		!reflect.DeepEqual(ruleIDsOf(denied.FiredRules), []string{"drafts.per_run", "drafts.per_matter_day"}) ||
		denied.Reason != "rule drafts.per_run: nine an hour (limit: at most 9 per run per hour; reached)" {
		t.Errorf("deny reached: %+v", denied)
	}
	for _, ids := range [][]string{{"no.such.limit"}, {"draft.big"}, {"drafts.per_run", "drafts.per_run"}} {
		if _, err := d.LimitsReached(ids); err == nil {
			t.Errorf("LimitsReached(%v) accepted", ids)
		}
	}
	// A limit the call is not counted by cannot be reached by it.
	r, _ := p.Decide(toolpolicy.Call{Tool: "read", Input: json.RawMessage(`{}`)})
	if _, err := r.LimitsReached([]string{"drafts.per_run"}); err == nil {
		t.Error("a limit reached by a call it does not count")
	}
}
