package toolpolicy

import (
	"encoding/json"
	"testing"
)

// benchInput is bench_test.go's benchEmail in canonical form.
var benchInput = []byte(`{"attachments":[{"document_id":"doc-4821","name":"engagement.pdf","size_bytes":184320}],` +
	`"body":"Dear Ms. Alvarez,\n\nThe signed engagement letter is attached.\n\nRegards,\nJ. Smith",` +
	`"cc":["j.smith@smithlaw.com"],"matter_id":"6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20","subject":"Engagement letter","to":"m.alvarez@acme-corp.com"}`)

var (
	benchBool  bool
	benchInt   int
	benchTape  = make([]tnode, 0, 64)
	benchBytes []byte
)

// BenchmarkDecideParts measures the parts of a decision on benchInput, next
// to what encoding/json and a bare loop over the same bytes cost on the same
// machine, so BENCHMARKS.md can say what costs what.
func BenchmarkDecideParts(b *testing.B) {
	tape, ok := parseTape(benchInput, nil)
	if !ok {
		b.Fatal("benchInput does not parse")
	}
	var bodyRaw []byte
	for i := range tape {
		if string(benchInput[tape[i].kstart:tape[i].kend]) == "body" {
			bodyRaw = benchInput[tape[i].start+1 : tape[i].end-1]
		}
	}
	body := appendUnescaped(nil, bodyRaw)
	b.Logf("input %d bytes, body %d bytes", len(benchInput), len(body))
	b.Run("machine_sum_loop_over_input", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, c := range benchInput {
				n += int(c)
			}
			benchInt += n
		}
	})
	b.Run("encoding_json_valid", func(b *testing.B) {
		for b.Loop() {
			benchBool = json.Valid(benchInput)
		}
	})
	b.Run("encoding_json_unmarshal_map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			_ = json.Unmarshal(benchInput, &v)
		}
	})
	b.Run("tape_parse", func(b *testing.B) {
		for b.Loop() {
			benchTape, benchBool = parseTape(benchInput, benchTape)
		}
	})
	b.Run("unescape_body", func(b *testing.B) {
		for b.Loop() {
			benchBytes = appendUnescaped(benchBytes[:0], bodyRaw)
		}
	})
	b.Run("detect_credential_body", func(b *testing.B) {
		for b.Loop() {
			benchBool = containsCredential(body)
		}
	})
	// The same detectors as RE2 patterns (detect_test.go), with Go's regexp.
	b.Run("regexp_credential_body", func(b *testing.B) {
		for b.Loop() {
			benchBool = credentialSpec.Match(body)
		}
	})
	b.Run("regexp_ssn_body", func(b *testing.B) {
		for b.Loop() {
			benchBool = ssnSpec.Match(body)
		}
	})
	b.Run("detect_ssn_body", func(b *testing.B) {
		for b.Loop() {
			benchBool = containsSSN(body)
		}
	})
	b.Run("detect_card_body", func(b *testing.B) {
		for b.Loop() {
			benchBool = containsCardNumber(body)
		}
	})
	b.Run("address_domain", func(b *testing.B) {
		var buf [256]byte
		for b.Loop() {
			_, benchBool = addressDomain([]byte("m.alvarez@acme-corp.com"), buf[:0])
		}
	})
}
