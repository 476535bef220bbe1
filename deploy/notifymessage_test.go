package deploy

// The counsel e-mail as EventBridge makes it (issue 25, item 7): the rule's
// input transformer applied to events whose names hold a quote, a
// backslash, a line break and angle brackets, by renderInput, which follows
// EventBridge's documented rules, and (TestNotificationMessageThroughMoto)
// by moto's EventBridge, an implementation of its own.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

// renderInput applies an input transformer to an event as EventBridge's
// documentation says it does (docs.aws.amazon.com/eventbridge/latest/
// userguide/eb-transform-target-input.html): each <name> of the template is
// the value at its path; inside a quoted string of the template the value's
// text goes in as it is ("EventBridge doesn't escape values extracted by
// Input Path", a string without its quotes, an object or array with its
// quotes removed); outside one, its JSON; a path the event lacks is not
// created and goes in as nothing. Only dot paths ($.a.b, dashes allowed)
// are modeled, and a missing path outside a string is an error here.
func renderInput(paths map[string]string, tmpl string, event []byte) (string, error) {
	var ev any
	if err := json.Unmarshal(event, &ev); err != nil {
		return "", err
	}
	lookup := func(path string) (any, bool) {
		rest, ok := strings.CutPrefix(path, "$.")
		if !ok {
			return nil, false
		}
		v := ev
		for seg := range strings.SplitSeq(rest, ".") {
			m, isMap := v.(map[string]any)
			if !isMap {
				return nil, false
			}
			if v, ok = m[seg]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	placeholder := regexp.MustCompile(`^<([A-Za-z0-9_.-]+)>`)
	var out strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(tmpl); {
		if m := placeholder.FindStringSubmatch(tmpl[i:]); m != nil {
			if path, known := paths[m[1]]; known {
				v, found := lookup(path)
				switch {
				case inString && !found:
				case inString:
					if s, isString := v.(string); isString {
						out.WriteString(s)
					} else {
						j, _ := json.Marshal(v)
						out.WriteString(strings.ReplaceAll(string(j), `"`, ""))
					}
				case !found:
					return "", fmt.Errorf("<%s> (%s) outside a string and not in the event: not modeled", m[1], path)
				default:
					j, _ := json.Marshal(v)
					out.Write(j)
				}
				i += len(m[0])
				continue
			}
		}
		c := tmpl[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		out.WriteByte(c)
		i++
	}
	return out.String(), nil
}

// TestRenderInput: the renderer does what the documentation's examples
// show, the unescaped string value among them.
func TestRenderInput(t *testing.T) {
	event := []byte(`{"detail-type": "x", "detail": {"instance-id": "i-0123456789", "state": "RUNNING", "n": 9, "o": {"k": "v"}, "q": "a \"b\""}}`)
	paths := map[string]string{"instance": "$.detail.instance-id", "state": "$.detail.state", "n": "$.detail.n", "o": "$.detail.o",
		"q": "$.detail.q", "none": "$.detail.none", "type": "$.detail-type"}
	for tmpl, want := range map[string]string{
		`"instance <instance> is in <state>"`:                      `"instance i-0123456789 is in RUNNING"`,
		`"instance \"<instance>\" is in <state>"`:                  `"instance \"i-0123456789\" is in RUNNING"`,
		`{"instance" : <instance>, "state": [ 9, <state>, true ]}`: `{"instance" : "i-0123456789", "state": [ 9, "RUNNING", true ]}`,
		`{"n": <n>, "o": <o>, "s": "<o> <n>"}`:                     `{"n": 9, "o": {"k":"v"}, "s": "{k:v} 9"}`,
		`"<type>: [<none>] <q>"`:                                   `"x: [] a "b""`,
	} {
		got, err := renderInput(paths, tmpl, event)
		if err != nil || got != want {
			t.Errorf("render %s = %s (%v), want %s", tmpl, got, err, want)
		}
	}
}

// hostileNames are a matter's and a requester's names that break a message
// which puts them into a JSON string unescaped.
var hostileNames = [][2]string{
	{`Ridgeway "Harbor" v. Doe`, `Dana "DR" Reyes`},
	{`C:\matters\ridgeway`, `back\slash`},
	{"two\nlines", "tab\there"},
	{"Acme <run> & Sons", "<desk> <matter>"},
}

// counselEvents are one event of each type the rule mails, with the names
// given.
func counselEvents(matterName, requesterName string) []notify.Event {
	base := notify.Event{FirmID: "f7a1c2d4-0000-4000-8000-000000000001", RunID: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		MatterID: "5d0c3a52-4b0e-4a4f-9a55-0f3f0d6f6c11", MatterName: matterName, RequestedBy: "0b9f3c6e-1d2a-4f5b-8c7d-9e0f1a2b3c4d",
		RequestedByName: requesterName, ToolName: "file_with_court", OccurredAt: "2026-12-03T15:00:00.000Z",
		DeskURL: "https://abc123.execute-api.us-east-1.amazonaws.com/prod/desk#/runs/7c9e6679-7425-40de-944b-e07fc1f90ae7"}
	pending := base
	pending.Type, pending.ID, pending.ApprovalRequestID, pending.RiskTier, pending.ExpiresAt =
		notify.WarrantPending, "e1", "3f2b8c1d-5e6a-4b7c-8d9e-0a1b2c3d4e5f", "high", "2026-12-03T16:00:00.000Z"
	pending.DeskURL += "/warrants/" + pending.ApprovalRequestID
	expiring := pending
	expiring.Type, expiring.ID = notify.WarrantExpiring, "e2"
	unknown := base
	unknown.Type, unknown.ID, unknown.EffectRef = notify.EffectOutcomeUnknown, "e3", "eff_1"
	return []notify.Event{pending, expiring, unknown}
}

// envelope is the event as EventBridge hands it to a rule.
func envelope(t *testing.T, e notify.Event) []byte {
	t.Helper()
	detail, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": e.Type,
		"source": notify.Source, "account": "123456789012", "time": "2026-12-03T15:00:00Z", "region": "us-east-1",
		"resources": []string{}, "detail": json.RawMessage(detail)})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// counselTransformer is NotifyCounselRule's input transformer with its
// paths evaluated for the parameters given.
func counselTransformer(t *testing.T, raw object, params map[string]string) (map[string]string, string) {
	t.Helper()
	tg := list(get(raw, "Resources", "NotifyCounselRule", "Properties", "Targets"))[0]
	paths := map[string]string{}
	for name, p := range get(tg, "InputTransformer", "InputPathsMap").(object) {
		paths[name] = str(evalIntrinsic(t, raw, p, params))
	}
	return paths, str(get(tg, "InputTransformer", "InputTemplate"))
}

// emailChoices are NotificationEmailNames' values.
func emailChoices(t *testing.T, raw object) []string {
	t.Helper()
	var out []string
	for _, v := range list(get(raw, "Parameters", "NotificationEmailNames", "AllowedValues")) {
		out = append(out, str(v))
	}
	if !slices.Equal(out, []string{"ids", "names"}) {
		t.Fatalf("NotificationEmailNames takes %v, want ids and names", out)
	}
	return out
}

// intendedMessage is the e-mail's text for e: the template's text with each
// placeholder the plain value its path names (the matter and the requester
// by name under "names", else by id).
func intendedMessage(t *testing.T, paths map[string]string, tmpl string, e notify.Event) string {
	t.Helper()
	var text string
	if err := json.Unmarshal([]byte(tmpl), &text); err != nil {
		t.Fatalf("the template is not one JSON string: %v", err)
	}
	orID := func(name, id string) string {
		if name != "" {
			return name
		}
		return id
	}
	plain := map[string]string{"$.detail-type": e.Type, "$.detail.escaped.tool_name": e.ToolName, "$.detail.escaped.risk_tier": e.RiskTier,
		"$.detail.escaped.matter": orID(e.MatterName, e.MatterID), "$.detail.escaped.matter_id": e.MatterID,
		"$.detail.escaped.requester": orID(e.RequestedByName, e.RequestedBy), "$.detail.escaped.requester_id": e.RequestedBy,
		"$.detail.escaped.expires_at": e.ExpiresAt, "$.detail.escaped.run_id": e.RunID, "$.detail.escaped.desk_url": e.DeskURL}
	return regexp.MustCompile(`<([^<>]*)>`).ReplaceAllStringFunc(text, func(p string) string {
		v, ok := plain[paths[p[1:len(p)-1]]]
		if !ok {
			t.Fatalf("the template's %s reads %s, which this test does not know", p, paths[p[1:len(p)-1]])
		}
		return v
	})
}

// TestNotificationMessage: for both NotificationEmailNames choices and each
// event type the rule mails, with names holding ", \, a line break and < >,
// the message EventBridge makes is one valid JSON string (what SNS mails,
// quotes and all), nothing in it a reader would not see as itself, and
// decoded it is the intended text: the names exactly under "names"; under
// "ids" (the default) the ids, and neither name anywhere in it.
func TestNotificationMessage(t *testing.T) {
	raw := rawTemplate(t)
	if d := str(get(raw, "Parameters", "NotificationEmailNames", "Default")); d != "ids" {
		t.Errorf("NotificationEmailNames defaults to %q, want ids: a matter's name may be privileged (docs/DECISIONS.md)", d)
	}
	for _, choice := range emailChoices(t, raw) {
		paths, tmpl := counselTransformer(t, raw, map[string]string{"NotificationEmailNames": choice})
		for _, names := range hostileNames {
			for _, e := range counselEvents(names[0], names[1]) {
				name := fmt.Sprintf("%s/%s/%q", choice, e.Type, names[0])
				msg, err := renderInput(paths, tmpl, envelope(t, e))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var text string
				if err := json.Unmarshal([]byte(msg), &text); err != nil {
					t.Errorf("%s: the message is not one JSON string (%v): %s", name, err, msg)
					continue
				}
				if bad := strings.IndexFunc(msg, func(r rune) bool { return r == '<' || r == '>' || r < 0x20 || contracts.Invisible(r) }); bad >= 0 {
					t.Errorf("%s: the mailed text has %q at %d: %s", name, msg[bad], bad, msg)
				}
				if want := intendedMessage(t, paths, tmpl, e); text != want {
					t.Errorf("%s: the message reads\n  %q\nwant\n  %q", name, text, want)
				}
				hasNames := strings.Contains(text, e.MatterName) && strings.Contains(text, e.RequestedByName)
				hasIDs := strings.Contains(text, e.MatterID) && strings.Contains(text, e.RequestedBy)
				switch choice {
				case "names":
					if !hasNames {
						t.Errorf("%s: the names are not in %q", name, text)
					}
				case "ids":
					leaks := slices.ContainsFunc([]string{e.MatterName, e.RequestedByName}, func(n string) bool {
						return strings.Contains(text, n) || strings.Contains(msg, notify.Escape(n))
					})
					if !hasIDs || leaks {
						t.Errorf("%s: want the ids and no name in %s", name, msg)
					}
				}
			}
		}
	}
}
