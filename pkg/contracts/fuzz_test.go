package contracts

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// FuzzParseEventLine: parsing never panics; a line it accepts re-encodes to
// exactly the same bytes (the parser accepts only what the writer produces).
func FuzzParseEventLine(f *testing.F) {
	for _, l := range sampleLedger(f) {
		f.Add(l.Raw)
	}
	key := runKey(f)
	c := fixedChain()
	c.Sealer = key
	evs, _ := sealedSample()
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(l.Raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := ParseEventLine(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnknownEvent) && !errors.Is(err, ErrHashMismatch) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if l.SchemaVersion == SchemaVersionSealed {
			// Sealed content cannot be re-encoded to the same bytes (each
			// value has a random nonce); opening either fails with a
			// typed error or yields a line whose event is valid.
			o, err := OpenLine(l, key)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, seal.ErrCannotOpen) {
					t.Fatalf("untyped open error %T: %v", err, err)
				}
				return
			}
			if err := o.Event.validate(); err != nil || o.Sealed {
				t.Fatalf("an opened line is not a valid event: %v", err)
			}
			return
		}
		re, err := EncodeLine(Line{Seq: l.Seq, RunID: l.RunID, FirmID: l.FirmID, CreatedAt: l.CreatedAt, PrevHash: l.PrevHash}, l.Event)
		if err != nil {
			t.Fatalf("accepted line does not re-encode: %v", err)
		}
		if re.Hash != l.Hash {
			t.Fatalf("accepted line re-encodes with another hash")
		}
	})
}

// FuzzDecodeStrict: the strict decoder never panics, and anything it accepts
// encoding/json also accepts.
func FuzzDecodeStrict(f *testing.F) {
	f.Add([]byte(`{"agent_key":"a","mode":"invoke","meta":{"run_id":"` + uRun + `","firm_id":"` + uFirm + `","user_id":"` + uUser + `"},"history":[]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"Agent_Key":"x"}`))
	f.Add([]byte(`[1,2,{"x":"\u0041"}] trailing`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a AgentInvoke
		err := DecodeStrict(raw, &a)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if c, err := Canonicalize(raw); err != nil || !bytes.HasPrefix(c, []byte("{")) {
			t.Fatalf("strictly accepted document does not canonicalize: %v", err)
		}
	})
}
