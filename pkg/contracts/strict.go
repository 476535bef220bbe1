package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrInvalid is matched by every strict-decoding and validation error.
var ErrInvalid = errors.New("invalid input")

// FieldError names the JSON path of the offending member ("" for the document
// itself) and a fixed reason. Paths reach problem details and logs, so they
// never hold a key the client chose freely:
//
//   - A key is named only when it is a known field of the target struct or a
//     short identifier (see isShortKey). A path of named keys keeps its plain
//     form: "agent_key", "payload.x", "history[0].role", "[2].a".
//   - Any other key is rendered by its position, and the whole path is then
//     written JSONPath-style, rooted at "$": a member of an object is "[n]",
//     n being its 0-based position among the object's members in document
//     order, as an array element is "[i]"; named keys are ".name". So an
//     unknown 5,000-character key as the fourth member of history[0] is
//     "$.history[0][3]", and a duplicate "client's memo" key as the third
//     member of meta is "$.meta[2]". Whether "[n]" counts object members or
//     array elements is told by the document itself.
//
// Error() renders "field <path>: <reason>", or "invalid JSON: <reason>" when
// the path is empty.
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "invalid JSON: " + e.Reason
	}
	return "field " + e.Path + ": " + e.Reason
}

func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// DecodeStrict decodes one JSON document into v and closes the holes that
// encoding/json leaves open even with DisallowUnknownFields: duplicate keys
// (anywhere, including inside free-form values such as tool inputs), keys that
// match a field only case-insensitively, trailing data, invalid UTF-8, wrong JSON
// types and missing required members. A struct field is required unless its json
// tag has omitempty. Errors are *FieldError naming the JSON path.
func DecodeStrict(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("contracts: DecodeStrict needs a non-nil pointer")
	}
	root, err := parseDocument(data)
	if err != nil {
		return err
	}
	return decodeNode(data, root, v)
}

func decodeNode(data []byte, n *node, v any) error {
	if err := checkNode(n, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(data[n.start:n.end], v); err != nil {
		var te *json.UnmarshalTypeError
		// Reasons are fixed texts: encoding/json's messages quote the input's
		// values, and these errors reach clients and logs. The path is ours,
		// found from the error's offset: te.Field is encoding/json's, which
		// omits array indexes and, built with GOEXPERIMENT=jsonv2, holds
		// map keys verbatim.
		if errors.As(err, &te) {
			return fieldErr(pathAt(n, n.start+int(te.Offset)), "wrong type or out of range")
		}
		return fieldErr("", "a value has an invalid form")
	}
	return nil
}

// node is a parsed JSON value: its kind, its byte span, and its members.
type node struct {
	kind       byte // '{', '[', '"', '0', 't' (true/false), 'n'
	start, end int
	keys       []string
	keyStarts  []int // offset of each key's opening quote
	vals       []*node
}

// scanner parses JSON strictly. It also notes whether the bytes are already in
// RFC 8785 canonical form (no insignificant whitespace, keys in order, minimal
// string escapes, integers only), which lets the ledger verifier hash a stored
// line as it is instead of canonicalizing it again.
type scanner struct {
	data         []byte
	i            int
	nonCanonical bool
	// anyNumber accepts numbers a double holds only approximately (RFC 8785
	// itself rounds them); everything that decodes or hashes what counsel
	// signs refuses them.
	anyNumber bool
}

const maxDepth = 64

func parseDocument(data []byte) (*node, error) {
	n, _, err := parseCanonical(data)
	return n, err
}

// parseCanonical parses like parseDocument and reports whether data is
// already canonical (true is exact; false may be a false negative).
func parseCanonical(data []byte) (*node, bool, error) { return parse(&scanner{data: data}) }

func parse(s *scanner) (*node, bool, error) {
	data := s.data
	if !utf8.Valid(data) {
		return nil, false, fieldErr("", "not valid UTF-8")
	}
	s.skipSpace()
	if s.i == len(data) {
		return nil, false, fieldErr("", "empty document")
	}
	n, err := s.value("", 0)
	if err != nil {
		return nil, false, err
	}
	s.skipSpace()
	if s.i != len(data) {
		return nil, false, fieldErr("", "trailing data after the JSON document at byte %d", s.i)
	}
	return n, !s.nonCanonical, nil
}

func (s *scanner) skipSpace() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.nonCanonical = true
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(path string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fieldErr(path, "nested deeper than %d levels", maxDepth)
	}
	if s.i >= len(s.data) {
		return nil, fieldErr(path, "unexpected end of JSON")
	}
	start := s.i
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object(path, depth)
	case c == '[':
		return s.array(path, depth)
	case c == '"':
		if _, err := s.str(path); err != nil {
			return nil, err
		}
		return &node{kind: '"', start: start, end: s.i}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		if err := s.number(path); err != nil {
			return nil, err
		}
		return &node{kind: '0', start: start, end: s.i}, nil
	case bytes.HasPrefix(s.data[s.i:], []byte("true")):
		s.i += 4
		return &node{kind: 't', start: start, end: s.i}, nil
	case bytes.HasPrefix(s.data[s.i:], []byte("false")):
		s.i += 5
		return &node{kind: 't', start: start, end: s.i}, nil
	case bytes.HasPrefix(s.data[s.i:], []byte("null")):
		s.i += 4
		return &node{kind: 'n', start: start, end: s.i}, nil
	default:
		return nil, fieldErr(path, "invalid character %q at byte %d", c, s.i)
	}
}

func (s *scanner) object(path string, depth int) (*node, error) {
	n := &node{kind: '{', start: s.i}
	s.i++
	s.skipSpace()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		n.end = s.i
		return n, nil
	}
	var seen map[string]struct{}
	for {
		s.skipSpace()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return nil, fieldErr(path, "expected an object key at byte %d", s.i)
		}
		keyStart := s.i
		key, err := s.str(path)
		if err != nil {
			return nil, err
		}
		// Byte order is UTF-16 order only for ASCII keys; others take the slow path.
		if k := len(n.keys); (k > 0 && n.keys[k-1] >= key) || !isASCII(key) {
			s.nonCanonical = true
		}
		// The scanner does not know the target type: only short keys are named.
		child := memberPath(path, key, len(n.keys), false)
		if len(n.keys) >= 8 && seen == nil {
			seen = make(map[string]struct{}, 16)
			for _, k := range n.keys {
				seen[k] = struct{}{}
			}
		}
		if seen != nil {
			if _, dup := seen[key]; dup {
				return nil, fieldErr(child, "duplicate key")
			}
			seen[key] = struct{}{}
		} else {
			for _, k := range n.keys {
				if k == key {
					return nil, fieldErr(child, "duplicate key")
				}
			}
		}
		s.skipSpace()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return nil, fieldErr(child, "expected ':' at byte %d", s.i)
		}
		s.i++
		s.skipSpace()
		v, err := s.value(child, depth+1)
		if err != nil {
			return nil, err
		}
		n.keys = append(n.keys, key)
		n.keyStarts = append(n.keyStarts, keyStart)
		n.vals = append(n.vals, v)
		s.skipSpace()
		if s.i >= len(s.data) {
			return nil, fieldErr(path, "unterminated object")
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			n.end = s.i
			return n, nil
		default:
			return nil, fieldErr(path, "expected ',' or '}' at byte %d", s.i)
		}
	}
}

func (s *scanner) array(path string, depth int) (*node, error) {
	n := &node{kind: '[', start: s.i}
	s.i++
	s.skipSpace()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		n.end = s.i
		return n, nil
	}
	for idx := 0; ; idx++ {
		s.skipSpace()
		v, err := s.value(path+"["+strconv.Itoa(idx)+"]", depth+1)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		s.skipSpace()
		if s.i >= len(s.data) {
			return nil, fieldErr(path, "unterminated array")
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			n.end = s.i
			return n, nil
		default:
			return nil, fieldErr(path, "expected ',' or ']' at byte %d", s.i)
		}
	}
}

// str scans a string and returns its decoded value. Strings without escapes
// (the common case) are returned without a second pass.
func (s *scanner) str(path string) (string, error) {
	start := s.i
	s.i++
	escaped := false
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			if !escaped {
				return string(s.data[start+1 : s.i-1]), nil
			}
			if !pairedSurrogates(s.data[start+1 : s.i-1]) {
				// encoding/json turns them into U+FFFD, so two different
				// inputs would decode (and hash) the same.
				return "", fieldErr(path, "unpaired UTF-16 surrogate escape")
			}
			var out string
			if err := json.Unmarshal(s.data[start:s.i], &out); err != nil {
				return "", fieldErr(path, "invalid string escape")
			}
			return out, nil
		case c == '\\':
			escaped = true
			if !s.canonicalEscape() {
				s.nonCanonical = true
			}
			s.i += 2
		case c < 0x20:
			return "", fieldErr(path, "control character in string")
		default:
			s.i++
		}
	}
	return "", fieldErr(path, "unterminated string")
}

func (s *scanner) number(path string) error {
	start := s.i
	if s.data[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	if digits() == 0 {
		return fieldErr(path, "invalid number")
	}
	if s.data[intStart] == '0' && s.i-intStart > 1 {
		return fieldErr(path, "number with a leading zero")
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return fieldErr(path, "invalid number")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return fieldErr(path, "invalid number")
		}
	}
	if s.i == start {
		return fieldErr(path, "invalid number")
	}
	// Canonical numbers here are plain integers that float64 holds exactly;
	// anything else (fractions, exponents, -0, 16+ digits) takes the slow path.
	num := s.data[start:s.i]
	if s.i-intStart > 15 || bytes.ContainsAny(num, ".eE") || string(num) == "-0" {
		s.nonCanonical = true
		if !s.anyNumber && !exactNumber(num) {
			return fieldErr(path, "number a double cannot hold exactly (beyond 2^53, or more digits than it keeps); send it as a string")
		}
	}
	return nil
}

// exactNumber reports whether the decimal value of num is exactly the value
// RFC 8785 writes for it (the shortest form of the nearest double). If not,
// the hash would cover another number than the one sent, and two different
// inputs (9007199254740993 and 9007199254740992) would share a hash.
func exactNumber(num []byte) bool {
	// Bounds first, so the exact comparison below stays cheap: no double is
	// written with more than 24 characters, and none has a decimal exponent
	// beyond ±400. A longer literal or a larger exponent could still be
	// exact (1.000…0, 0e-999999); refusing it is the safe side.
	if len(num) > 64 {
		return false
	}
	if i := bytes.IndexAny(num, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(string(num[i+1:]), "+"))
		if err != nil || exp > 400 || exp < -400 {
			return false
		}
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	sent, ok := new(big.Rat).SetString(string(num))
	if !ok {
		return false
	}
	written, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok && sent.Cmp(written) == 0
}

// pairedSurrogates reports whether every \uD800-\uDFFF escape in a string's
// raw bytes is half of a high-low pair. (Raw UTF-8 cannot hold a surrogate:
// utf8.Valid refuses it.) A malformed escape is left to the decoder to report.
func pairedSurrogates(raw []byte) bool {
	highPending := false // the previous unit was a high surrogate escape
	for i := 0; i < len(raw); {
		unit, isEscape := -1, false
		if raw[i] == '\\' && i+1 < len(raw) {
			isEscape = true
			if raw[i+1] == 'u' && i+6 <= len(raw) {
				if v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16); err == nil {
					unit = int(v)
				}
				i += 6
			} else {
				i += 2
			}
		} else {
			i++
		}
		isHigh := isEscape && unit >= 0xD800 && unit <= 0xDBFF
		isLow := isEscape && unit >= 0xDC00 && unit <= 0xDFFF
		if highPending != isLow {
			return false // a high without its low, or a low without its high
		}
		highPending = isHigh
	}
	return !highPending
}

// canonicalEscape reports whether the escape at s.i is one RFC 8785 writes:
// the short escapes, or \u00xx (lowercase) for other control characters.
func (s *scanner) canonicalEscape() bool {
	if s.i+1 >= len(s.data) {
		return false
	}
	switch s.data[s.i+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if s.i+5 >= len(s.data) || s.data[s.i+2] != '0' || s.data[s.i+3] != '0' {
			return false
		}
		hi, lo := s.data[s.i+4], s.data[s.i+5]
		if hi != '0' && hi != '1' || !(lo >= '0' && lo <= '9' || lo >= 'a' && lo <= 'f') {
			return false
		}
		switch v := (hi-'0')<<4 | hexVal(lo); v {
		case '\b', '\f', '\n', '\r', '\t':
			return false
		}
		return true
	}
	return false
}

func hexVal(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// joinPath appends child to path. child is a name the code chose (a known
// field) or a whole path found inside a nested value; a "$"-rooted child
// re-roots the result, so "payload.input" and "$[2]" join as
// "$.payload.input[2]". Keys read from a document go through memberPath.
func joinPath(path, child string) string {
	if path == "" {
		return child
	}
	if strings.HasPrefix(child, "$") {
		return rooted(path) + child[1:]
	}
	return path + "." + child
}

// memberPath is the path of the member key, at position idx among its
// object's members, of the object at path (see FieldError). known says the
// key is a field of the target struct, so the code, not the client, chose it.
func memberPath(path, key string, idx int, known bool) string {
	if known || isShortKey(key) {
		return joinPath(path, key)
	}
	return rooted(path) + "[" + strconv.Itoa(idx) + "]"
}

// rooted writes path in its "$"-rooted form.
func rooted(path string) string {
	switch {
	case path == "":
		return "$"
	case path[0] == '$':
		return path
	case path[0] == '[':
		return "$" + path
	}
	return "$." + path
}

// maxKeyName is the longest key an error path names.
const maxKeyName = 64

// isShortKey reports whether an object key may be named in an error path:
// 1 to 64 ASCII letters, digits, '_' or '-', the first a letter or '_'.
// Such a key reads as a field name, and it cannot carry what a free-form key
// can: whitespace, quotes, newlines, control, bidi or other non-ASCII
// characters (log injection, spoofed text), path syntax ('.', '[', ']', '$',
// which would make a path ambiguous; a leading digit or '-' would read as an
// index or a number), or more than 64 bytes of client text. Every JSON name
// of the contract structs fits, so every message naming them keeps its form.
func isShortKey(k string) bool {
	if k == "" || len(k) > maxKeyName {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// IsRoleName reports whether s may be a user's role as run.started records
// it: a short key (1 to 64 ASCII letters, digits, '_' or '-', the first a
// letter or '_'). The API reads a token's roles by the same rule.
func IsRoleName(s string) bool { return isShortKey(s) }

// ValidPath reports whether p has the form of the paths this package writes
// (see FieldError): empty, or named segments that are short keys and "[n]"
// indexes, in the plain form or rooted at "$". A caller that passes a
// FieldError's path on to a client can check it, so a path built elsewhere
// from a client's key is not echoed.
func ValidPath(p string) bool {
	if p == "" {
		return true
	}
	i := 0
	switch p[0] {
	case '$':
		i = 1
	case '[':
	default:
		if i = keyLen(p); i == 0 {
			return false
		}
	}
	for i < len(p) {
		switch p[i] {
		case '.':
			n := keyLen(p[i+1:])
			if n == 0 {
				return false
			}
			i += 1 + n
		case '[':
			j := i + 1
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				j++
			}
			if j == i+1 || j == len(p) || p[j] != ']' {
				return false
			}
			i = j + 1
		default:
			return false
		}
	}
	return true
}

// keyLen is the length of the short key p starts with (up to a '.' or '['),
// or 0 if there is none.
func keyLen(p string) int {
	n := strings.IndexAny(p, ".[")
	if n < 0 {
		n = len(p)
	}
	if !isShortKey(p[:n]) {
		return 0
	}
	return n
}

// pathAt is the path, relative to n, of the deepest value in n's tree whose
// bytes span offset off (an encoding/json error offset: just past a
// literal, or just inside an object or array). Keys are named as the
// scanner names them.
func pathAt(n *node, off int) string {
	path := ""
	for {
		next := -1
		for i, v := range n.vals {
			if v.start <= off && off <= v.end {
				next = i
				break
			}
		}
		if next < 0 {
			return path
		}
		if n.kind == '{' {
			path = memberPath(path, n.keys[next], next, false)
		} else {
			path += "[" + strconv.Itoa(next) + "]"
		}
		n = n.vals[next]
	}
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

type fieldInfo struct {
	name     string
	index    int
	required bool
	typ      reflect.Type
}

type structInfo struct {
	fields []fieldInfo
	byName map[string]int
}

var structCache sync.Map // reflect.Type -> *structInfo

func infoFor(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fi := fieldInfo{name: name, index: i, typ: f.Type, required: !strings.Contains(opts, "omitempty")}
		si.byName[name] = len(si.fields)
		si.fields = append(si.fields, fi)
	}
	structCache.Store(t, si)
	return si
}

// checkNode walks the parsed tree against the Go type that will receive it.
func checkNode(n *node, t reflect.Type, path string) error {
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return nil // free-form: duplicates were already rejected by the scanner
	}
	if n.kind == 'n' {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			return nil
		}
		return fieldErr(path, "must not be null")
	}
	if t.Kind() == reflect.Pointer {
		return checkNode(n, t.Elem(), path)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // the type decodes itself (time.Time and friends)
	}
	want := ""
	switch t.Kind() {
	case reflect.Struct:
		if n.kind != '{' {
			want = "an object"
			break
		}
		si := infoFor(t)
		present := make([]bool, len(si.fields))
		for k, key := range n.keys {
			fi, ok := si.byName[key]
			if !ok {
				return fieldErr(memberPath(path, key, k, false), "unknown field")
			}
			present[fi] = true
			if err := checkNode(n.vals[k], si.fields[fi].typ, memberPath(path, key, k, true)); err != nil {
				return err
			}
		}
		for i, f := range si.fields {
			if f.required && !present[i] {
				return fieldErr(joinPath(path, f.name), "required field is missing")
			}
		}
		return nil
	case reflect.Map:
		if n.kind != '{' {
			want = "an object"
			break
		}
		for k, key := range n.keys {
			if err := checkNode(n.vals[k], t.Elem(), memberPath(path, key, k, false)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		if n.kind != '[' {
			want = "an array"
			break
		}
		for i, v := range n.vals {
			if err := checkNode(v, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		if n.kind != '"' {
			want = "a string"
		}
	case reflect.Bool:
		if n.kind != 't' {
			want = "a boolean"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if n.kind != '0' {
			want = "a number"
		}
	}
	if want != "" {
		return fieldErr(path, "wrong type: must be %s", want)
	}
	return nil
}
