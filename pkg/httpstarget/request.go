package httpstarget

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

// toolURL is the tool's path under base, or an error when tool is not a
// plain relative path (see the package doc): what it returns never leaves
// base's origin or its path.
func toolURL(base *url.URL, tool string) (*url.URL, error) {
	if !catalog.HTTPSPath(tool) {
		return nil, errors.New("the tool is not a path under the server's URL (segments of letters, digits, '-', '.', '_' and '~' joined by '/', no \".\" or \"..\")")
	}
	u := *base
	// Every byte of tool is unreserved, so it reads the same escaped or not.
	u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + "/" + tool
	u.Path = strings.TrimSuffix(base.Path, "/") + "/" + tool
	return &u, nil
}

// sfString is s as a Structured Field String (RFC 9651 §4.1.6): quoted,
// with '"' and '\' escaped; false when s holds anything but printable
// ASCII, which a String cannot carry.
func sfString(s string) (string, bool) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", false
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), true
}

// fields are the header fields that carry the call's ids: the
// Idempotency-Key and the Warrant-Run dictionary.
type fields struct {
	idempotencyKey, warrantRun string
}

// callFields checks c and encodes its ids. The effect_ref, the firm and
// the run are required: an effect without its key could run twice, and an
// endpoint serving several firms needs the firm.
func callFields(c agent.TargetCall) (fields, error) {
	if !json.Valid(c.Input) || !bytes.HasPrefix(bytes.TrimLeft(c.Input, " \t\r\n"), []byte("{")) {
		return fields{}, errors.New("the input is not a JSON object")
	}
	if c.EffectRef == "" || c.FirmID == "" || c.RunID == "" {
		return fields{}, errors.New("the call has no effect_ref, firm or run")
	}
	var f fields
	var ok bool
	if f.idempotencyKey, ok = sfString(c.EffectRef); !ok {
		return fields{}, errors.New("the effect_ref is not printable ASCII")
	}
	members := []struct{ key, value string }{{"firm", c.FirmID}, {"run", c.RunID}, {"matter", c.MatterID}}
	var dict []string
	for _, m := range members {
		if m.value == "" {
			continue // only the matter may be absent
		}
		v, ok := sfString(m.value)
		if !ok {
			return fields{}, errors.New("the call's " + m.key + " id is not printable ASCII")
		}
		dict = append(dict, m.key+"="+v)
	}
	f.warrantRun = strings.Join(dict, ", ")
	return f, nil
}
