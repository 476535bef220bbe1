package contracts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// runKey is a fresh data key for the sample run, from a local keyring.
func runKey(t testing.TB) *seal.RunKey {
	t.Helper()
	ring, err := seal.NewLocalKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := ring.NewRunKey(context.Background(), uFirm, uRun)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sealedSample is sampleEvents with every privileged member in use (a
// counsel message, an edit with a note, a reconciliation note), and the
// privileged strings a stored line must not show.
func sealedSample() ([]Event, []string) {
	evs := sampleEvents()
	evs[0].(*RunStarted).CounselMessage = "Counsel says: privileged strategy"
	edited := json.RawMessage(`{"court":"Superior Court of Privilege","matter_id":"` + uMatter + `"}`)
	eh, _ := InputHash(edited)
	d := evs[6].(*ApprovalDecided)
	d.Note, d.EditedInput, d.EditedInputSHA256, d.EditedRiskTier = "note: client confided X", edited, eh, "high"
	evs[8].(*ToolCompleted).InputSHA256 = eh
	evs[len(evs)-2] = &EffectReconciled{EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", // for run.completed
		ToolName: "file_court_document", InputSHA256: eh, Outcome: "executed", ReconciledBy: uUser, Note: "the clerk confirmed in secret"}
	return evs, []string{"File the motion", "privileged strategy", "I will file it", "Superior Court", "court filing" /* not privileged: the policy's reason */, "File a motion",
		"client confided", "F-1", "clerk confirmed"}
}

// TestSealedLineRoundTrip: every privileged member is stored only sealed;
// the stored line verifies (hash, chain) without the key and keeps every
// other member readable; opened, it is the very event that was written.
func TestSealedLineRoundTrip(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, secrets := sealedSample()
	var export []byte
	var written []Line
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		if l.SchemaVersion != SchemaVersionSealed || !bytes.Contains(l.Raw, []byte(`"schema_version":"2"`)) {
			t.Fatalf("%s: stored as schema %q", e.EventType(), l.SchemaVersion)
		}
		written = append(written, l)
		export = append(append(export, l.Raw...), '\n')
	}
	for _, s := range secrets {
		if s == "court filing" {
			if !bytes.Contains(export, []byte(s)) {
				t.Fatal("the policy's reason was sealed; it is not content")
			}
			continue
		}
		if bytes.Contains(export, []byte(s)) {
			t.Fatalf("the stored ledger shows %q", s)
		}
	}
	i := 0
	err := ReadLedger(bytes.NewReader(export), func(l Line) error {
		want := written[i]
		i++
		if l.Sealed != (len(SealedMembers[l.Type]) > 0) {
			t.Fatalf("%s: Sealed = %v", l.Type, l.Sealed)
		}
		// Unopened: the clear members read as written, the sealed ones empty.
		blank := reflect.New(reflect.TypeOf(want.Event).Elem()).Interface().(Event)
		wb, _ := json.Marshal(want.Event)
		if err := json.Unmarshal(wb, blank); err != nil {
			t.Fatal(err)
		}
		clearSealed(blank)
		if !reflect.DeepEqual(l.Event, blank) {
			t.Fatalf("%s unopened:\n got %+v\nwant %+v", l.Type, l.Event, blank)
		}
		opened, err := OpenLine(l, k)
		if err != nil {
			t.Fatalf("%s: open: %v", l.Type, err)
		}
		if opened.Sealed || !bytes.Equal(opened.Raw, l.Raw) || opened.Hash != l.Hash {
			t.Fatalf("%s: opening changed the stored form", l.Type)
		}
		// The very event a schema 1 line of it reads as (both canonical).
		plain, err := EncodeLine(Line{Seq: want.Seq, RunID: want.RunID, FirmID: want.FirmID, CreatedAt: want.CreatedAt, PrevHash: want.PrevHash}, want.Event)
		if err != nil {
			t.Fatal(err)
		}
		plainRead, err := ParseEventLine(plain.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opened.Event, plainRead.Event) {
			t.Fatalf("%s opened:\n got %+v\nwant %+v", l.Type, opened.Event, plainRead.Event)
		}
		return nil
	})
	if err != nil || i != len(written) {
		t.Fatalf("ReadLedger: %v after %d lines", err, i)
	}
}

// TestSealedLineAfterTheKeyIsDestroyed: the chain still verifies and the
// clear members still read; the content is gone (ErrKeyUnavailable).
func TestSealedLineAfterTheKeyIsDestroyed(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, _ := sealedSample()
	var export []byte
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		export = append(append(export, l.Raw...), '\n')
	}
	k.Destroy()
	n := 0
	err := ReadLedger(bytes.NewReader(export), func(l Line) error {
		n++
		if tr, ok := l.Event.(*ToolRequested); ok && (tr.InputSHA256 == "" || tr.ToolName != "file_court_document") {
			t.Fatalf("tool.requested's clear members lost: %+v", tr)
		}
		if _, err := OpenLine(l, k); l.Sealed && !errors.Is(err, seal.ErrKeyUnavailable) {
			t.Fatalf("%s: open with a destroyed key = %v, want ErrKeyUnavailable", l.Type, err)
		}
		return nil
	})
	if err != nil || n != len(evs) {
		t.Fatalf("ReadLedger without the key: %v after %d lines", err, n)
	}
}

// TestSealedValueMovedDoesNotOpen: a sealed value copied from one line or
// member to another (the line re-hashed) verifies as stored but does not
// open: the field it was sealed for names the line's seq and member.
func TestSealedValueMovedDoesNotOpen(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, _ := sealedSample()
	var lines []Line
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	field := func(l Line, path ...string) json.RawMessage {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(l.Raw, &m)
		v := m["payload"]
		for _, p := range path {
			var o map[string]json.RawMessage
			_ = json.Unmarshal(v, &o)
			v = o[p]
		}
		return v
	}
	// run.blocked's tool_input (seq 6) into tool.requested's input (seq 5).
	req, blocked := lines[4], lines[5]
	moved := bytes.Replace(req.Raw, field(req, "input"), field(blocked, "approval", "tool_input"), 1)
	// run.completed-less sample: turn.delta's text (seq 2) into turn.completed's text (seq 3).
	tc, td := lines[2], lines[1]
	movedText := bytes.Replace(tc.Raw, field(tc, "text"), field(td, "text"), 1)
	for name, raw := range map[string][]byte{"another line's member": moved, "another line, same member": movedText} {
		l, err := ParseEventLine(reseal(t, raw))
		if err != nil {
			t.Fatalf("%s: the resealed line should verify as stored: %v", name, err)
		}
		if _, err := OpenLine(l, k); !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("%s: open = %v, want ErrCannotOpen", name, err)
		}
	}
}

// TestSealedLineRefusesPlainContent: in a schema 2 line a privileged
// member in the clear is refused by name, not passed on as content.
func TestSealedLineRefusesPlainContent(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, _ := sealedSample()
	var req Line
	for _, e := range evs[:5] {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		req = l
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(req.Raw, &m)
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m["payload"], &p)
	p["input"] = json.RawMessage(`{"court":"Superior Court"}`)
	m["payload"], _ = json.Marshal(p)
	b, _ := json.Marshal(m)
	_, err := ParseEventLine(reseal(t, b))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "payload.input" || !strings.Contains(err.Error(), "sealed") {
		t.Fatalf("a plain input in a schema 2 line = %v, want a field error naming payload.input", err)
	}
}

// TestSealedLineDigestsCheckedWhenOpened: an input sealed under the right
// field but not the one input_sha256 states (a writer with the key and a
// bug, or an insider with both) does not open as a valid line.
func TestSealedLineDigestsCheckedWhenOpened(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, _ := sealedSample()
	var req Line
	for _, e := range evs[:5] {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		req = l
	}
	other, err := k.SealJSON(SealedField(req.Seq, "input"), json.RawMessage(`{"court":"Another Court"}`))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(req.Raw, &m)
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m["payload"], &p)
	p["input"] = other
	m["payload"], _ = json.Marshal(p)
	b, _ := json.Marshal(m)
	l, err := ParseEventLine(reseal(t, b))
	if err != nil {
		t.Fatalf("stored form: %v", err)
	}
	var fe *FieldError
	if _, err := OpenLine(l, k); !errors.As(err, &fe) || fe.Path != "payload.input_sha256" {
		t.Fatalf("open = %v, want the input_sha256 mismatch", err)
	}
}

// TestSealedAndPlainLinesChain: a run begun before sealing (schema 1)
// continues sealed (schema 2) in one chain, and both read.
func TestSealedAndPlainLinesChain(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	evs := sampleEvents()
	var export []byte
	for i, e := range evs {
		if i == 4 {
			c.Sealer = k
		}
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		export = append(append(export, l.Raw...), '\n')
	}
	var versions []string
	err := ReadLedger(bytes.NewReader(export), func(l Line) error {
		versions = append(versions, l.SchemaVersion)
		if _, err := OpenLine(l, k); err != nil {
			return err
		}
		return nil
	})
	if err != nil || strings.Join(versions, "") != "11112222222" {
		t.Fatalf("ReadLedger: %v, versions %v", err, versions)
	}
	if _, err := OpenLine(Line{Sealed: true, Seq: 3}, nil); !errors.Is(err, ErrNotOpened) {
		t.Fatalf("OpenLine without an opener = %v", err)
	}
}

// OpenedJSON shows a reader the opened payload under the stored header and
// hash, marked opened; a line still sealed is refused, and an unsealed one
// shows its own payload.
func TestOpenedJSON(t *testing.T) {
	k := runKey(t)
	c := fixedChain()
	c.Sealer = k
	evs, _ := sealedSample()
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := ParseEventLine(l.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenedJSON(stored); stored.Sealed && !errors.Is(err, ErrNotOpened) {
			t.Fatalf("%s still sealed: %v", l.Type, err)
		}
		opened, err := OpenLine(stored, k)
		if err != nil {
			t.Fatal(err)
		}
		out, err := OpenedJSON(opened)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Hash    string          `json:"hash"`
			Seq     int64           `json:"seq"`
			Opened  bool            `json:"opened"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		// The same JSON as the event written (inputs come back canonical).
		want, _ := json.Marshal(e)
		var gv, wv any
		_ = json.Unmarshal(got.Payload, &gv)
		_ = json.Unmarshal(want, &wv)
		if got.Hash != l.Hash || got.Seq != l.Seq || !got.Opened || !reflect.DeepEqual(gv, wv) {
			t.Fatalf("%s: opened JSON %s", l.Type, out)
		}
	}
}
