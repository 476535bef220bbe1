package catalog

import (
	"encoding/json"
	"io"
	"unicode/utf8"
)

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
