package notify_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

// hostile are names a firm's registry or a token may give: a quote, a
// backslash, a line break, angle brackets that look like a template's
// placeholder, invisible characters and a character past U+FFFF.
var hostile = []string{
	`Ridgeway "Harbor" v. Doe`,
	`C:\matters\new`,
	"two\nlines\r\tand a tab",
	"Acme <run> & Sons <desk>",
	"bidi \u202eevil\u202c, zero\u200bwidth, tag \U000E0041, nul \x00, del \x7f, sep \u2028",
	"𝄞 music",
	`"\"<>\\`,
	"",
}

// TestEscape: an escaped value between quotes is a JSON string that
// decodes to the value itself, and it has no quote it does not escape, no
// < or > (no placeholder can form in a template) and no character a reader
// would not see as itself.
func TestEscape(t *testing.T) {
	for _, s := range hostile {
		checkEscape(t, s)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // names are valid UTF-8 (contracts.DisplayName); a bad byte is written as U+FFFD
		}
		checkEscape(t, s)
	})
}

func checkEscape(t *testing.T, s string) {
	t.Helper()
	e := notify.Escape(s)
	// One JSON string: a quote Escape left unescaped would end it early and
	// fail the decoding.
	var back string
	if err := json.Unmarshal([]byte(`"`+e+`"`), &back); err != nil || back != s {
		t.Fatalf("Escape(%q) = %q: decodes to %q, %v", s, e, back, err)
	}
	if strings.ContainsAny(e, "<>") {
		t.Errorf("Escape(%q) = %q keeps a < or >", s, e)
	}
	for i, r := range e {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u202e' || r == '\u200b' || r >= 0xE0000 && r <= 0xE007F {
			t.Errorf("Escape(%q) = %q keeps %U at %d", s, e, r, i)
		}
	}
}

// TestEventCarriesEscaped: an event on the bus carries, under "escaped",
// each text field a message shows escaped, the matter and the requester by
// name when known, else by id; the plain fields stay as they are.
func TestEventCarriesEscaped(t *testing.T) {
	e := notify.Event{Type: notify.WarrantPending, ID: "e1", FirmID: "f1", RunID: "r1", MatterID: "m1", MatterName: hostile[0],
		RequestedBy: "u1", RequestedByName: hostile[3], ToolName: "file_with_court", RiskTier: "high", ExpiresAt: "2026-12-03T16:00:00.000Z",
		DeskURL: "https://desk.example/desk#/runs/r1", OccurredAt: "2026-12-03T15:00:00.000Z"}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var detail struct {
		notify.Event
		Escaped map[string]string `json:"escaped"`
	}
	if err := json.Unmarshal(raw, &detail); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(detail.Event, e) {
		t.Errorf("the plain fields came back as %+v, want %+v", detail.Event, e)
	}
	want := map[string]string{"tool_name": "file_with_court", "risk_tier": "high", "matter": hostile[0], "matter_id": "m1",
		"requester": hostile[3], "requester_id": "u1", "expires_at": e.ExpiresAt, "run_id": "r1", "outcome": "", "desk_url": e.DeskURL}
	if len(detail.Escaped) != len(want) {
		t.Errorf("escaped has %v, want the keys of %v", detail.Escaped, want)
	}
	for k, v := range want {
		var got string
		if err := json.Unmarshal([]byte(`"`+detail.Escaped[k]+`"`), &got); err != nil || got != v {
			t.Errorf("escaped.%s = %q: decodes to %q (%v), want %q", k, detail.Escaped[k], got, err, v)
		}
	}
	// No name: the ids stand in.
	e.MatterName, e.RequestedByName = "", ""
	if x := e.Escaped(); x.Matter != "m1" || x.Requester != "u1" {
		t.Errorf("without names: matter %q, requester %q; want the ids", x.Matter, x.Requester)
	}
}
