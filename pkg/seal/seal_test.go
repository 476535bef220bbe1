package seal_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// TestMain stops the shared moto_server (if a test started it) after the
// tests.
func TestMain(m *testing.M) { dynamotest.Main(m) }

var testMaster = bytes.Repeat([]byte{0x5a}, 32)

func localRing(t testing.TB) *seal.LocalKeyring {
	t.Helper()
	r, err := seal.NewLocalKeyring(testMaster)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newKey(t testing.TB, r seal.Keyring, firm, run string) (*seal.RunKey, []byte) {
	t.Helper()
	k, wrapped, err := r.NewRunKey(t.Context(), firm, run)
	if err != nil {
		t.Fatalf("NewRunKey(%s, %s): %v", firm, run, err)
	}
	if k.Firm() != firm || k.Run() != run {
		t.Fatalf("key for %s/%s, want %s/%s", k.Firm(), k.Run(), firm, run)
	}
	return k, wrapped
}

// The JSON a run stores, spacing and escapes as given: what comes back must
// be these bytes, not an equivalent re-encoding.
var samples = []string{
	`{"to":"opposing@counsel.example",  "body":"Re: settlement \u00e9 \"draft\""}`,
	`"a filing's text"`,
	`[1, 2.50, true, null]`,
	`12e3`,
	`{}`,
	`{"sealed":"v1","ct":"not a real one"}`,
}

func TestSealJSONRoundTripIsByteIdentical(t *testing.T) {
	k, wrapped := newKey(t, localRing(t), "firm-a", "run-1")
	opened, err := localRing(t).OpenRunKey(t.Context(), "firm-a", "run-1", wrapped)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		stored, err := k.SealJSON("input", json.RawMessage(s))
		if err != nil {
			t.Fatalf("SealJSON(%s): %v", s, err)
		}
		if bytes.Contains(stored, []byte("settlement")) || bytes.Contains(stored, []byte("filing")) {
			t.Fatalf("stored form shows the plaintext: %s", stored)
		}
		if !seal.IsSealed(stored) {
			t.Fatalf("IsSealed(%s) = false", stored)
		}
		for _, key := range []*seal.RunKey{k, opened} {
			got, err := key.OpenJSON("input", stored)
			if err != nil || !bytes.Equal(got, []byte(s)) {
				t.Fatalf("OpenJSON = %q, %v; want %q", got, err, s)
			}
		}
	}
}

func TestStoredForm(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	stored, err := k.SealJSON("text", json.RawMessage(`"hello"`))
	if err != nil {
		t.Fatal(err)
	}
	var form map[string]string
	if err := json.Unmarshal(stored, &form); err != nil {
		t.Fatalf("stored form is not a JSON object of strings: %s", stored)
	}
	ct, err := base64.StdEncoding.DecodeString(form["ct"])
	if len(form) != 2 || form["sealed"] != "v1" || err != nil {
		t.Fatalf("stored form %s", stored)
	}
	// nonce (12) + len(`"hello"`) (7) + tag (16)
	if len(ct) != 12+7+16 {
		t.Fatalf("ct is %d bytes, want 35", len(ct))
	}
	if !strings.HasPrefix(string(stored), `{"sealed":"v1","ct":"`) {
		t.Fatalf("stored form %s: members out of the documented order", stored)
	}

	// A store may re-encode the object: other order, spacing, escapes.
	reencoded := []string{
		`{"ct":"` + form["ct"] + `","sealed":"v1"}`,
		" {\n \"sealed\" : \"v1\" ,\t\"ct\": \"" + form["ct"] + "\" } ",
		`{"sealed":"\u00761","ct":"` + strings.ReplaceAll(form["ct"], "/", `\/`) + `"}`,
	}
	for _, r := range reencoded {
		got, err := k.OpenJSON("text", json.RawMessage(r))
		if err != nil || string(got) != `"hello"` {
			t.Errorf("OpenJSON(%s) = %s, %v", r, got, err)
		}
	}
}

func TestIsSealedIsExact(t *testing.T) {
	ct := base64.StdEncoding.EncodeToString(make([]byte, 28))
	short := base64.StdEncoding.EncodeToString(make([]byte, 27))
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"sealed":"v1","ct":"` + ct + `"}`, true},
		{`{"ct":"` + ct + `","sealed":"v1"}`, true},
		{`{"sealed":"v2","ct":"` + ct + `"}`, false},
		{`{"sealed":"v1","ct":"` + short + `"}`, false},                      // shorter than nonce and tag
		{`{"sealed":"v1","ct":"` + ct + `","x":1}`, false},                   // another member
		{`{"sealed":"v1","ct":"` + ct + `","ct":"` + ct + `"}`, false},       // a member twice
		{`{"sealed":"v1","sealed":"v1","ct":"` + ct + `"}`, false},           // a member twice
		{`{"Sealed":"v1","ct":"` + ct + `"}`, false},                         // case
		{`{"sealed":"v1"}`, false},                                           // ct missing
		{`{"ct":"` + ct + `"}`, false},                                       // version missing
		{`{"sealed":"v1","ct":"` + ct[:len(ct)-1] + `"}`, false},             // bad padding
		{`{"sealed":"v1","ct":"` + strings.TrimRight(ct, "=") + `"}`, false}, // unpadded
		{`{"sealed":"v1","ct":"` + ct[:8] + `\n` + ct[8:] + `"}`, false},     // a line break
		{`{"sealed":"v1","ct":"` + ct + `"}x`, false},                        // trailing data
		{`{"sealed":"v1","ct":"` + ct + `"} {}`, false},                      // a second value
		{`{"sealed":"v1","ct":` + "1" + `}`, false},                          // not a string
		{`{"sealed":1,"ct":"` + ct + `"}`, false},
		{`["sealed","v1"]`, false},
		{`"sealed"`, false},
		{`null`, false},
		{``, false},
		{`{"sealed":"v1","ct":"` + ct, false}, // truncated
	} {
		if got := seal.IsSealed(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("IsSealed(%s) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestNoncesDiffer(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	seen := map[string]bool{}
	nonces := map[string]bool{}
	for range 1000 {
		s, err := k.Seal("text", []byte("the same privileged words"))
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(s)] || nonces[string(s[:12])] {
			t.Fatal("two seals of one plaintext share a nonce or a ciphertext")
		}
		seen[string(s)], nonces[string(s[:12])] = true, true
	}
}

func TestAlteredValueDoesNotOpen(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	s, err := k.Seal("input", []byte(`{"amount":"1000000"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(s)
			bad[i] ^= bit
			if pt, err := k.Open("input", bad); !errors.Is(err, seal.ErrCannotOpen) || pt != nil {
				t.Fatalf("byte %d flipped: Open = %q, %v", i, pt, err)
			}
		}
	}
	for _, bad := range [][]byte{s[:len(s)-1], append(bytes.Clone(s), 0), s[:27], nil} {
		if pt, err := k.Open("input", bad); !errors.Is(err, seal.ErrCannotOpen) || pt != nil {
			t.Fatalf("%d bytes: Open = %q, %v", len(bad), pt, err)
		}
	}
	// The error is an integrity failure of what was stored.
	_, err = k.Open("input", s[:10])
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Kind != failure.KindLedgerCorrupt {
		t.Fatalf("error %v is not ledger_corrupt", err)
	}
}

func TestMovedValueDoesNotOpen(t *testing.T) {
	r := localRing(t)
	k, _ := newKey(t, r, "firm-a", "run-1")
	otherRun, _ := newKey(t, r, "firm-a", "run-2")
	otherFirm, _ := newKey(t, r, "firm-b", "run-1")
	stored, err := k.SealJSON("input", json.RawMessage(`"draft"`))
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() (json.RawMessage, error){
		"another field": func() (json.RawMessage, error) { return k.OpenJSON("output", stored) },
		"another run":   func() (json.RawMessage, error) { return otherRun.OpenJSON("input", stored) },
		"another firm":  func() (json.RawMessage, error) { return otherFirm.OpenJSON("input", stored) },
	} {
		if pt, err := open(); !errors.Is(err, seal.ErrCannotOpen) || pt != nil {
			t.Errorf("%s: OpenJSON = %s, %v", name, pt, err)
		}
	}
}

func TestPlainValueWhereSealedMustBe(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	for _, s := range []string{`"draft"`, `{"sealed":"v1"}`, `not json`, ``} {
		if pt, err := k.OpenJSON("input", json.RawMessage(s)); !errors.Is(err, seal.ErrCannotOpen) || pt != nil {
			t.Errorf("OpenJSON(%q) = %s, %v", s, pt, err)
		}
	}
}

func TestSealJSONRefusesInvalidJSON(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	for _, s := range []string{``, `{`, `"a" "b"`, `{"a":}`} {
		if out, err := k.SealJSON("input", json.RawMessage(s)); err == nil || out != nil {
			t.Errorf("SealJSON(%q) = %s, %v", s, out, err)
		}
	}
	if out, err := k.Seal("", []byte("x")); err == nil || out != nil {
		t.Errorf("Seal without a field = %x, %v", out, err)
	}
}

// Without a key nothing is sealed and, above all, the plaintext is not
// handed back in its place.
func TestNoKeyNoOutput(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	stored, err := k.SealJSON("input", json.RawMessage(`"draft"`))
	if err != nil {
		t.Fatal(err)
	}
	k.Destroy()
	k.Destroy() // twice is harmless
	var nilKey *seal.RunKey
	for name, key := range map[string]*seal.RunKey{"destroyed": k, "nil": nilKey} {
		if out, err := key.SealJSON("input", json.RawMessage(`"draft"`)); !errors.Is(err, seal.ErrKeyUnavailable) || out != nil {
			t.Errorf("%s: SealJSON = %s, %v", name, out, err)
		}
		if out, err := key.Seal("input", []byte("draft")); !errors.Is(err, seal.ErrKeyUnavailable) || out != nil {
			t.Errorf("%s: Seal = %s, %v", name, out, err)
		}
		if out, err := key.OpenJSON("input", stored); !errors.Is(err, seal.ErrKeyUnavailable) || out != nil {
			t.Errorf("%s: OpenJSON = %s, %v", name, out, err)
		}
	}
}

func TestSealedJSON(t *testing.T) {
	k, _ := newKey(t, localRing(t), "firm-a", "run-1")
	s, err := k.Seal("note", []byte("remember the deadline"))
	if err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(struct {
		Note seal.Sealed `json:"note"`
	}{s})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Note seal.Sealed `json:"note"`
	}
	if err := json.Unmarshal(line, &back); err != nil || !bytes.Equal(back.Note, s) {
		t.Fatalf("Sealed round trip through %s: %v", line, err)
	}
	if out, err := json.Marshal(struct{ Note seal.Sealed }{}); err == nil {
		t.Fatalf("a zero Sealed marshals as %s", out)
	}
	if err := json.Unmarshal([]byte(`{"note":"remember the deadline"}`), &back); !errors.Is(err, seal.ErrCannotOpen) {
		t.Fatalf("Unmarshal of a plain value = %v", err)
	}
}
