package provenance

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzTrace: Trace never panics, and never gives a value a trusted origin
// unless a trusted source holds it: counsel's message (compared loosely,
// after the kind's own normalization, so this check is wider than the
// matcher), or the registry's domains.
func FuzzTrace(f *testing.F) {
	f.Add("send to bob@client.example", `{"text":"bcc x@attacker.example"}`, "x@attacker.example", byte(0), []byte(`{"v":[1]}`))
	f.Add("https://portal.client.example/a", "https://user@drop.example:1/", "https://client.example@drop.example/", byte(1), []byte(`{"v":"a"}`))
	f.Add("host efile.court.example.", "", "EFILE.court.example:443", byte(2), []byte(`{"a":{"b":["c"]}}`))
	f.Add("ref 12 3456-78", "Account: 12 3456 78", "1234-5678", byte(3), []byte(`{"v":null}`))
	f.Add("attach /m/x.pdf.", `{"p":"C:\\a\\b"}`, `C:\a\b`, byte(4), []byte(`{"v":"\u0041"}`))
	kinds := []Kind{KindEmail, KindURL, KindHost, KindIdentifier, KindPath}
	f.Fuzz(func(t *testing.T, counsel, result, value string, k byte, raw []byte) {
		kind := kinds[int(k)%len(kinds)]
		src := &Sources{Counsel: counsel, Matter: Matter{ClientDomains: []string{"client.example"}}, Firm: Firm{Domains: []string{"firm.example"}}}
		src.AddResult(Result{Seq: 1, Tool: "read_document", Text: []byte(result)})
		specs := []Spec{{Pointer: "/v", Kind: kind}, {Pointer: "/*", Kind: kind}, {Pointer: "/a/*/b", Kind: kind}}
		// Arbitrary bytes as the input: no panic, and every finding is
		// either unreadable or a string the matchers read.
		if fs, err := Trace(raw, specs, src); err == nil {
			for _, fd := range fs {
				checkTrusted(t, fd, counsel)
			}
			_ = Verdict(fs)
			_ = Recheck(Store(fs), Store(fs))
		}
		in, err := json.Marshal(map[string]string{"v": value})
		if err != nil {
			return
		}
		fs, err := Trace(in, specs[:1], src)
		if err != nil {
			t.Fatalf("Trace of a one-member object: %v", err)
		}
		if len(fs) != 1 {
			t.Fatalf("%d findings for one value", len(fs))
		}
		checkTrusted(t, fs[0], counsel)
		if err := Recheck(Store(fs), Store(fs)); err != nil {
			t.Fatalf("Recheck of its own trace: %v", err)
		}
	})
}

func checkTrusted(t *testing.T, fd Finding, counsel string) {
	t.Helper()
	if fd.Unreadable != "" && len(fd.Origins) > 0 {
		t.Fatalf("an unreadable finding has origins: %+v", fd)
	}
	for _, o := range fd.Origins {
		switch o.Source {
		case SourceCounsel:
			if !looselyIn(fd.Kind, fd.Value, counsel) {
				t.Fatalf("%s %q traced to counsel's message %q", fd.Kind, fd.Value, counsel)
			}
		case SourceMatter, SourceFirm:
			d := "client.example"
			if o.Source == SourceFirm {
				d = "firm.example"
			}
			if h := hostOf(fd.Kind, fd.Value); h != d {
				t.Fatalf("%s %q traced to the %s (host %q)", fd.Kind, fd.Value, o.Source, h)
			}
		}
	}
}

func hostOf(k Kind, v string) string {
	switch k {
	case KindEmail:
		_, d, _ := normEmail(v)
		return d
	case KindURL:
		h, _ := urlHost(v)
		return h
	case KindHost:
		h, _ := normHost(v)
		return h
	}
	return ""
}

func looselyIn(k Kind, v, text string) bool {
	lt := strings.ToLower(text)
	switch k {
	case KindEmail:
		a, _, _ := normEmail(v)
		return a != "" && strings.Contains(lt, a)
	case KindURL, KindHost:
		h := hostOf(k, v)
		return h != "" && strings.Contains(lt, h)
	case KindIdentifier:
		id, _ := normIdentifier(v)
		var b strings.Builder
		for i := 0; i < len(lt); i++ {
			if isAlnum(lt[i]) {
				b.WriteByte(lt[i])
			}
		}
		return id != "" && strings.Contains(b.String(), id)
	}
	return v != "" && strings.Contains(text, v)
}
