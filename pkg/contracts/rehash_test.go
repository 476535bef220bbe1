package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// reseal recomputes a line's own hash after its bytes were edited, the way
// anyone who can write the table could "re-chain" a ledger.
func reseal(t *testing.T, raw []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hash")
	unsigned, _ := json.Marshal(m)
	c, err := Canonicalize(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	m["hash"], _ = json.Marshal(sha256Hex(c))
	out, _ := json.Marshal(m)
	out, _ = Canonicalize(out)
	return out
}

// A tool.requested line whose input does not hash to its input_sha256 is not
// a line of any ledger, however well its own hash is resealed: the executed
// input and the hashed input must be the same bytes (issue 11, item 2).
func TestToolRequestedInputMustHashToItsDigest(t *testing.T) {
	good := sampleLedger(t)[4]
	if good.Type != TypeToolRequested {
		t.Fatalf("sample line 5 is %s", good.Type)
	}
	edited := reseal(t, bytes.Replace(good.Raw, []byte(`Superior Court`), []byte(`Inferior Court`), 1))
	_, err := ParseEventLine(edited)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "payload.input_sha256" {
		t.Fatalf("ParseEventLine(resealed edit) = %v, want a FieldError at payload.input_sha256", err)
	}
	if _, err := ParseEventLine(reseal(t, good.Raw)); err != nil {
		t.Fatalf("resealing an unedited line broke it: %v", err)
	}
	req := *good.Event.(*ToolRequested)
	req.Input = json.RawMessage(`{"court":"Inferior Court"}`)
	if _, err := fixedChain().Append(&req); err == nil {
		t.Fatal("a line whose input does not hash to input_sha256 was encoded")
	}
}
