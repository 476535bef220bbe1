package contracts

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// randomJSON writes a random JSON document meant to reach every JCS rule:
// keys that sort differently as UTF-8 and as UTF-16, escapes of every kind,
// numbers in every notation, whitespace, nesting.
func randomJSON(r *rand.Rand, depth int) string {
	ws := func() string { return []string{"", "", " ", "\n\t "}[r.IntN(4)] }
	switch k := r.IntN(10); {
	case depth < 4 && k < 3:
		n := r.IntN(6)
		var members []string
		used := map[string]bool{}
		for i := 0; i < n; i++ {
			key := randomString(r)
			var dec string
			if json.Unmarshal([]byte(key), &dec) != nil || used[dec] {
				continue
			}
			used[dec] = true
			members = append(members, ws()+key+ws()+":"+ws()+randomJSON(r, depth+1)+ws())
		}
		return "{" + strings.Join(members, ",") + "}"
	case depth < 4 && k < 5:
		n := r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + randomJSON(r, depth+1) + ws()
		}
		return "[" + strings.Join(parts, ",") + "]"
	case k < 7:
		return randomString(r)
	case k < 9:
		return randomNumber(r)
	default:
		return []string{"true", "false", "null"}[r.IntN(3)]
	}
}

func randomString(r *rand.Rand) string {
	pieces := []string{"a", "b", "Z", "é", "\u20ac", "\U0001F600", "\uE000", "\uFFFD", "\x7f",
		`\n`, `\t`, `\b`, `\f`, `\r`, `\"`, `\\`, `\/`, `\u0000`, `\u001f`, `\u00e9`, `\u20AC`,
		`\ud83d\ude00`, `\uE001`, "<", "&", "\u2028"}
	n := r.IntN(5)
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < n; i++ {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

func randomNumber(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return strconv.Itoa(r.IntN(2000) - 1000)
	case 1:
		return strconv.FormatInt(r.Int64N(1<<53), 10)
	case 2:
		return strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', -1, 64)
	case 3:
		return strconv.FormatFloat(r.Float64(), 'e', r.IntN(17), 64)
	case 4:
		return []string{"-0", "0", "0.0", "1E2", "1e+21", "1e21", "1e-7", "123456789012345678", "12345678901234567", "9007199254740993", "0.000001", "5e-324"}[r.IntN(12)]
	case 5:
		return strconv.Itoa(r.IntN(10)) + "." + strconv.Itoa(r.IntN(1000))
	case 6:
		return "-" + strconv.Itoa(r.IntN(1e9)) + "e" + strconv.Itoa(r.IntN(30)-15)
	default:
		return strconv.FormatInt(r.Int64N(1e15), 10)
	}
}

// TestAppendCanonicalMatchesJCS checks the writer against gowebpki/jcs, the
// reference implementation, on the RFC 8785 vectors, the sample ledger and
// thousands of random documents, with and without the canonical fast path.
func TestAppendCanonicalMatchesJCS(t *testing.T) {
	var docs [][]byte
	inputs, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	if len(docs) == 0 {
		t.Fatal("no RFC 8785 vectors found")
	}
	for _, l := range sampleLedger(t) {
		docs = append(docs, l.Raw)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		docs = append(docs, []byte(randomJSON(r, 0)))
	}
	compared := 0
	for _, d := range docs {
		compared += checkCanonical(t, d)
	}
	if compared < 4000 {
		t.Fatalf("only %d of %d documents were comparable: the generator is broken", compared, len(docs))
	}
}

// checkCanonical compares Canonicalize with jcs.Transform on one document,
// returning 1 when both accept it.
func checkCanonical(t *testing.T, d []byte) int {
	t.Helper()
	want, werr := jcs.Transform(d)
	if werr != nil {
		// jcs refuses a bare number with whitespace around it ("0 "),
		// which RFC 8785 allows; it reads the same number trimmed.
		want, werr = jcs.Transform(bytes.TrimSpace(d))
	}
	got, gerr := Canonicalize(d)
	if gerr != nil {
		// The scanner is stricter than jcs (duplicate keys, leading zeros);
		// it must never accept what jcs refuses.
		return 0
	}
	if werr != nil {
		t.Fatalf("Canonicalize accepts what jcs refuses (%v):\n%s", werr, d)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical form differs for\n%s\n got %s\nwant %s", d, got, want)
	}
	// Canonical input is returned as it is, and is its own canonical form.
	again, err := Canonicalize(got)
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("canonical form is not a fixed point: %s (%v)", again, err)
	}
	return 1
}

func FuzzAppendCanonical(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50; i++ {
		f.Add([]byte(randomJSON(r, 0)))
	}
	f.Fuzz(func(t *testing.T, d []byte) { checkCanonical(t, d) })
}
