package toolpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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

// benchLetter is a letter to a client of the kind the detectors read most:
// dates, amounts, a docket number, citations, a phone number, an address
// with a ZIP+4, a Bates range, and no identifier (1.5 KB).
const benchLetter = `Dear Ms. Alvarez,

Thank you for your call on December 3, 2026. As discussed, the hearing on the motion to dismiss in Acme Corp. v.
Northwind Traders, Case No. 3:24-cv-01234-JSC (N.D. Cal.), is set for January 14, 2027 at 10:00 a.m. in Courtroom 5,
17th Floor, 450 Golden Gate Avenue, San Francisco, CA 94102-3489. Opposing counsel filed their opposition on
2026-11-26 (ECF No. 45) with a declaration and 12 exhibits, produced as NW0001234 through NW0001877.

Our reply is due on December 17, 2026. It will argue that the claims are time-barred under Cal. Civ. Proc. Code
section 338(d) and that the fraud allegations do not meet Fed. R. Civ. P. 9(b); see Bell Atlantic Corp. v. Twombly,
550 U.S. 544, 570 (2007), and Kearns v. Ford Motor Co., 567 F.3d 1120, 1125 (9th Cir. 2009). The damages claimed,
$1,234,567.89 plus interest at 10% from March 1, 2024, rest on invoices INV-2024-004512 to INV-2024-004530, which
your records show were paid by wire on April 2, 2024 (reference 20240402-77123).

Please send us, by December 10, the signed engagement letter for matter 12345-0001, the purchase orders
(PO 4500012345 and PO 4500012346), and the name of the person at Acme who approved them. If it is easier, my
assistant can collect the originals at your office; she can be reached at (415) 555-0100, extension 214.

We estimate 25 to 30 hours for the reply, at the rates in our letter of October 1, 2026. The invoice for November
(No. 2026-1187) is attached; it covers 41.5 hours and totals $28,430.00.

Regards,
J. Smith
Smith & Partners LLP
`

// detectorTexts are the texts BenchmarkDetectors reads: what the policy
// reads of benchInput (sentText), a letter, the corpus's negatives that
// neither version flags (a detector stops at its first find), joined as
// sentText joins strings, and texts written to make a scanner work hard,
// each at 8 KiB and 256 KiB: the same time a byte at both sizes is linear
// time.
func detectorTexts(tb testing.TB) []struct {
	name string
	text []byte
} {
	e := newEvaluator(&Call{Input: benchInput}, tables{})
	if !e.parsed() {
		tb.Fatal("benchInput does not parse")
	}
	sent := append([]byte(nil), e.sentText()...)
	e.release()
	var negatives []byte
	data, err := os.ReadFile("testdata/identifiers/negative.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range bytes.Lines(data) {
		var c struct{ Text string }
		if err := json.Unmarshal(line, &c); err != nil {
			tb.Fatal(err)
		}
		t := []byte(c.Text)
		if containsSSN(t) || containsCardNumber(t) || containsCredential(t) ||
			legacyContainsSSN(t) || legacyContainsCardNumber(t) || legacyContainsCredential(t) {
			continue
		}
		negatives = append(append(negatives, t...), stringSep...)
	}
	texts := []struct {
		name string
		text []byte
	}{{"sent_email", sent}, {"letter", []byte(benchLetter)}, {"negatives", negatives}}
	for _, unit := range []string{"123-45-", "123 45 ", "SSN: 1", "Soc. Sec. No. is ", "password:ab ", "x_token=", "://a:", "eyJ",
		"SG.aaaa", "4111 ", "-----BEGIN A ", "is "} {
		for _, size := range []int{8 << 10, 256 << 10} {
			texts = append(texts, struct {
				name string
				text []byte
			}{fmt.Sprintf("hard_%q_%dKiB", unit, size>>10), bytes.Repeat([]byte(unit), size/len(unit))})
		}
	}
	// A detector stops at its first find: none may find anything here, in
	// either version, or the benchmark would time an early return.
	for _, tc := range texts {
		if containsSSN(tc.text) || containsCardNumber(tc.text) || containsCredential(tc.text) ||
			legacyContainsSSN(tc.text) || legacyContainsCardNumber(tc.text) || legacyContainsCredential(tc.text) {
			tb.Fatalf("%s: a detector finds something", tc.name)
		}
	}
	return texts
}

// BenchmarkDetectors runs the three detectors, as they were before issue 25
// (legacy_detect_test.go) and as they are, on the same texts in one run, so
// BENCHMARKS.md can give the ratio.
func BenchmarkDetectors(b *testing.B) {
	type detectors struct{ ssn, card, credential func([]byte) bool }
	for _, tc := range detectorTexts(b) {
		for _, v := range []struct {
			name string
			d    detectors
		}{
			{"legacy", detectors{legacyContainsSSN, legacyContainsCardNumber, legacyContainsCredential}},
			{"new", detectors{containsSSN, containsCardNumber, containsCredential}},
		} {
			b.Run(tc.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				for b.Loop() {
					// All three, as the policy's rules run each.
					ssn, card, cred := v.d.ssn(tc.text), v.d.card(tc.text), v.d.credential(tc.text)
					benchBool = ssn || card || cred
				}
			})
		}
	}
}

// BenchmarkDetectorParts is each detector alone on the letter, before and
// after.
func BenchmarkDetectorParts(b *testing.B) {
	text := []byte(benchLetter)
	for _, d := range []struct {
		name string
		f    func([]byte) bool
	}{
		{"ssn/legacy", legacyContainsSSN}, {"ssn/new", containsSSN},
		{"card/legacy", legacyContainsCardNumber}, {"card/new", containsCardNumber},
		{"credential/legacy", legacyContainsCredential}, {"credential/new", containsCredential},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				benchBool = d.f(text)
			}
		})
	}
}
