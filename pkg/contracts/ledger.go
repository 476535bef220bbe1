package contracts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"
)

// TimeLayout is the ledger's timestamp form: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Line is one ledger line: the header, the typed event, and the exact bytes
// that were stored (the canonical form, which is what the hash covers).
type Line struct {
	SchemaVersion string
	Seq           int64
	RunID         string
	FirmID        string
	Type          EventType
	CreatedAt     string
	PrevHash      string
	Hash          string
	Event         Event
	Raw           []byte
	// Sealed: the line is schema 2 and its privileged members were not
	// opened, so Event holds them empty (OpenLine fills them in).
	Sealed bool
}

type lineWire struct {
	SchemaVersion string          `json:"schema_version"`
	Seq           int64           `json:"seq"`
	RunID         string          `json:"run_id"`
	FirmID        string          `json:"firm_id"`
	Type          EventType       `json:"type"`
	CreatedAt     string          `json:"created_at"`
	PrevHash      string          `json:"prev_hash"`
	Hash          string          `json:"hash,omitempty"`
	Payload       json.RawMessage `json:"payload"`
}

var lineWireType = reflect.TypeFor[lineWire]()

// ErrHashMismatch means a line's bytes do not hash to its own hash field.
var ErrHashMismatch = errors.New("ledger line hash does not match its content")

// ParseEventLine strictly parses one ledger line, checks its own hash, and
// returns it with its typed event. An unknown type or schema_version is
// ErrUnknownEvent; every other defect is a *FieldError or ErrHashMismatch.
// Linking a line to its predecessor is CheckLink's job.
func ParseEventLine(raw []byte) (Line, error) {
	root, canonical, err := parseCanonical(raw)
	if err != nil {
		return Line{}, err
	}
	if root.kind != '{' {
		return Line{}, fieldErr("", "a ledger line must be an object")
	}
	// Version and type first: a line from a newer writer must halt the reader
	// with ErrUnknownEvent, not be misreported as malformed.
	var payload, hashNode *node
	hashIndex := -1
	for i, k := range root.keys {
		v := root.vals[i]
		switch k {
		case "schema_version":
			if v.kind == '"' && string(raw[v.start+1:v.end-1]) != SchemaVersion && string(raw[v.start+1:v.end-1]) != SchemaVersionSealed {
				return Line{}, unknownEvent("schema_version %s", raw[v.start:v.end])
			}
		case "type":
			if v.kind == '"' {
				if _, ok := eventTypes[EventType(raw[v.start+1:v.end-1])]; !ok {
					return Line{}, unknownEvent("type %s", raw[v.start:v.end])
				}
			}
		case "payload":
			payload = v
		case "hash":
			hashNode, hashIndex = v, i
		}
	}
	if err := checkNode(root, lineWireType, ""); err != nil {
		return Line{}, err
	}
	l, err := validHeader(raw, root, hashNode)
	if err != nil {
		return Line{}, err
	}
	var ev Event
	if l.SchemaVersion == SchemaVersionSealed {
		if ev, err = parseSealedPayload(raw, payload, l.Type); err != nil {
			return Line{}, err
		}
		l.Sealed = len(SealedMembers[l.Type]) > 0
	} else {
		ev = reflect.New(eventTypes[l.Type]).Interface().(Event)
		if err := checkNode(payload, reflect.TypeOf(ev).Elem(), "payload"); err != nil {
			return Line{}, err
		}
		if err := json.Unmarshal(raw[payload.start:payload.end], ev); err != nil {
			return Line{}, fieldErr("payload", "a value has an invalid form")
		}
		if err := ev.validate(); err != nil {
			return Line{}, err
		}
	}
	l.Event = ev
	var sum string
	if canonical {
		// The stored line is canonical, so cutting its hash member out leaves
		// exactly the canonical form the hash covers: no second JCS pass.
		sum = sha256Hex(cutMember(raw, root, hashIndex))
	} else if sum, err = hashWithout(raw, root, hashNode); err != nil {
		return Line{}, err
	}
	if sum != l.Hash {
		return Line{}, fmt.Errorf("seq %d: %w", l.Seq, ErrHashMismatch)
	}
	// Digests the line states about its own payload are re-derived, never
	// trusted: a resealed line passes the check above, but it cannot make
	// an edited input hash to the digest counsel signed. A sealed line's
	// are re-derived when it is opened (OpenLine).
	if d, ok := ev.(digester); ok && !l.Sealed {
		if err := d.checkDigests(); err != nil {
			return Line{}, err
		}
	}
	return l, nil
}

// ParseLineHeader reads a ledger line's header and checks the line's own
// hash, whatever its type or schema version: a reader that halts on an event
// it does not know (ErrUnknownEvent from ParseEventLine) can still follow
// the chain past it to the run's signed head. The payload is not checked.
func ParseLineHeader(raw []byte) (Line, error) {
	root, _, err := parseCanonical(raw)
	if err != nil {
		return Line{}, err
	}
	if root.kind != '{' {
		return Line{}, fieldErr("", "a ledger line must be an object")
	}
	var hashNode *node
	for i, k := range root.keys {
		if k == "hash" {
			hashNode = root.vals[i]
		}
		if v := root.vals[i]; k != "payload" && k != "seq" && v.kind != '"' {
			return Line{}, fieldErr(k, "must be a string")
		}
	}
	l, err := validHeader(raw, root, hashNode)
	if err != nil {
		return Line{}, err
	}
	sum, err := hashWithout(raw, root, hashNode)
	if err != nil {
		return Line{}, err
	}
	if sum != l.Hash {
		return Line{}, fmt.Errorf("seq %d: %w", l.Seq, ErrHashMismatch)
	}
	return l, nil
}

// validHeader reads and validates a line's header (its hash member must be
// there: hashNode).
func validHeader(raw []byte, root, hashNode *node) (Line, error) {
	if hashNode == nil {
		return Line{}, fieldErr("hash", "required field is missing")
	}
	l, err := headerOf(raw, root)
	if err != nil {
		return Line{}, err
	}
	l.Raw = raw
	return l, l.validateHeader()
}

// cutMember returns a compact object's bytes without member i.
func cutMember(raw []byte, obj *node, i int) []byte {
	start, end := obj.keyStarts[i], obj.vals[i].end
	if i+1 < len(obj.vals) {
		end = obj.keyStarts[i+1] // drop the member and the comma after it
	} else if i > 0 {
		start = obj.vals[i-1].end // last member: drop the comma before it
	}
	out := make([]byte, 0, len(raw)-(end-start))
	return append(append(out, raw[:start]...), raw[end:]...)
}

// headerOf reads the header members from the parsed tree (already checked
// against lineWire's types), so the line is not unmarshalled a second time.
func headerOf(raw []byte, root *node) (Line, error) {
	var l Line
	for i, k := range root.keys {
		v := root.vals[i]
		if k == "seq" {
			n, err := strconv.ParseInt(string(raw[v.start:v.end]), 10, 64)
			if err != nil {
				return Line{}, fieldErr("seq", "must be an integer")
			}
			l.Seq = n
			continue
		}
		var dst *string
		switch k {
		case "schema_version":
			dst = &l.SchemaVersion
		case "run_id":
			dst = &l.RunID
		case "firm_id":
			dst = &l.FirmID
		case "created_at":
			dst = &l.CreatedAt
		case "prev_hash":
			dst = &l.PrevHash
		case "hash":
			dst = &l.Hash
		case "type":
			dst = (*string)(&l.Type)
		default:
			continue
		}
		span := raw[v.start:v.end]
		if bytes.IndexByte(span, '\\') < 0 {
			*dst = string(span[1 : len(span)-1])
		} else if err := json.Unmarshal(span, dst); err != nil {
			return Line{}, fieldErr(k, "a value has an invalid form")
		}
	}
	return l, nil
}

// hashWithout hashes the canonical form of the line with its hash member removed.
func hashWithout(raw []byte, root, hashNode *node) (string, error) {
	buf := make([]byte, 0, len(raw))
	buf = append(buf, '{')
	first := true
	for i, v := range root.vals {
		if v == hashNode {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf, _ = appendJSONString(buf, root.keys[i])
		buf = append(buf, ':')
		buf = append(buf, raw[v.start:v.end]...)
	}
	buf = append(buf, '}')
	c, err := Canonicalize(buf)
	if err != nil {
		return "", err
	}
	return sha256Hex(c), nil
}

func appendJSONString(buf []byte, s string) ([]byte, error) {
	b, err := json.Marshal(s)
	return append(buf, b...), err
}

func (l Line) validateHeader() error {
	if l.Seq < 1 {
		return fieldErr("seq", "must be at least 1")
	}
	if err := CheckUUID("run_id", l.RunID); err != nil {
		return err
	}
	if err := CheckUUID("firm_id", l.FirmID); err != nil {
		return err
	}
	if err := checkTime("created_at", l.CreatedAt); err != nil {
		return err
	}
	if err := checkHash("prev_hash", l.PrevHash); err != nil {
		return err
	}
	return checkHash("hash", l.Hash)
}

func checkTime(path, s string) error {
	t, err := time.Parse(TimeLayout, s)
	if err != nil || t.Format(TimeLayout) != s {
		return fieldErr(path, "must be an RFC 3339 UTC time with milliseconds, like 2026-12-02T10:00:00.123Z")
	}
	return nil
}

// FormatTime renders t the way the ledger stores times.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// EncodeLine builds the canonical bytes and hash of a line from its header
// fields (Hash and Raw are ignored and filled in) and event.
func EncodeLine(l Line, e Event) (Line, error) { return encodeLine(l, e, nil) }

// encodeLine is EncodeLine, and with a sealer EncodeSealedLine: the event
// is validated (digests re-derived from the plaintext), its privileged
// members are sealed when s is set (schema 2), and the line is hashed over
// the stored form. The Line carries the plaintext event and the stored
// bytes in Raw.
func encodeLine(l Line, e Event, s Sealer) (Line, error) {
	if e == nil {
		return Line{}, errors.New("contracts: EncodeLine needs an event")
	}
	l.SchemaVersion = SchemaVersion
	if s != nil {
		l.SchemaVersion = SchemaVersionSealed
	}
	l.Type = e.EventType()
	l.Event = e
	l.Hash = ""
	l.Sealed = false
	if err := e.validate(); err != nil {
		return Line{}, err
	}
	if d, ok := e.(digester); ok {
		if err := d.checkDigests(); err != nil {
			return Line{}, err
		}
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return Line{}, fmt.Errorf("contracts: encode %s payload: %w", l.Type, err)
	}
	if s != nil {
		if payload, err = sealPayload(payload, l.Type, l.Seq, s); err != nil {
			return Line{}, err
		}
	}
	w := lineWire{SchemaVersion: l.SchemaVersion, Seq: l.Seq, RunID: l.RunID, FirmID: l.FirmID,
		Type: l.Type, CreatedAt: l.CreatedAt, PrevHash: l.PrevHash, Payload: payload}
	unsigned, err := json.Marshal(w)
	if err != nil {
		return Line{}, err
	}
	c, err := Canonicalize(unsigned)
	if err != nil {
		return Line{}, err
	}
	w.Hash = sha256Hex(c)
	raw, err := signedLine(c, w)
	if err != nil {
		return Line{}, err
	}
	l.Hash = w.Hash
	l.Raw = raw
	if err := l.validateHeader(); err != nil {
		return Line{}, err
	}
	return l, nil
}

// signedLine returns the canonical bytes of w with its hash member, given
// the canonical bytes of w without it. RFC 8785 sorts members by key, and of
// a line's keys only created_at and firm_id sort before "hash", so when the
// unsigned form starts with exactly those two members the signed form is the
// same bytes with "hash":"<hex>", inserted after them: one canonicalization
// per line instead of two. Otherwise (a header string JCS would escape, which
// validateHeader refuses anyway) it canonicalizes the signed form in full.
func signedLine(unsigned []byte, w lineWire) ([]byte, error) {
	prefix := make([]byte, 0, 96)
	prefix = append(prefix, `{"created_at":`...)
	prefix = strconv.AppendQuote(prefix, w.CreatedAt)
	prefix = append(prefix, `,"firm_id":`...)
	prefix = strconv.AppendQuote(prefix, w.FirmID)
	prefix = append(prefix, ',')
	if plainASCII(w.CreatedAt) && plainASCII(w.FirmID) && bytes.HasPrefix(unsigned, prefix) {
		out := make([]byte, 0, len(unsigned)+len(`"hash":"",`)+len(w.Hash))
		out = append(out, prefix...)
		out = append(out, `"hash":"`...)
		out = append(out, w.Hash...)
		out = append(out, `",`...)
		return append(out, unsigned[len(prefix):]...), nil
	}
	signed, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return Canonicalize(signed)
}

// plainASCII reports whether s is printable ASCII that needs no escape in a
// JSON string, so Go's quoting and RFC 8785's agree on it.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Chain appends events to one run's ledger, keeping the seq and head hash.
type Chain struct {
	RunID, FirmID string
	Seq           int64  // seq of the last line (0 before line 1)
	Head          string // hash of the last line (ZeroHash before line 1)
	Now           func() time.Time
	// Sealer, when set, seals each line's privileged members (schema 2,
	// EncodeSealedLine); nil writes schema 1 lines.
	Sealer Sealer
}

// NewChain starts a run's ledger at seq 0.
func NewChain(runID, firmID string) *Chain {
	return &Chain{RunID: runID, FirmID: firmID, Head: ZeroHash, Now: time.Now}
}

// ChainAfter continues a ledger after its last line.
func ChainAfter(last Line) *Chain {
	return &Chain{RunID: last.RunID, FirmID: last.FirmID, Seq: last.Seq, Head: last.Hash, Now: time.Now}
}

// Next encodes e as the next line without advancing the chain, so a write that
// fails leaves the chain where the store is.
func (c *Chain) Next(e Event) (Line, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	l := Line{Seq: c.Seq + 1, RunID: c.RunID, FirmID: c.FirmID, CreatedAt: FormatTime(now()), PrevHash: c.Head}
	return encodeLine(l, e, c.Sealer)
}

// Advance moves the chain past a line that was stored.
func (c *Chain) Advance(l Line) { c.Seq, c.Head = l.Seq, l.Hash }

// Append encodes and advances in one step (for lines built in a batch).
func (c *Chain) Append(e Event) (Line, error) {
	l, err := c.Next(e)
	if err != nil {
		return Line{}, err
	}
	c.Advance(l)
	return l, nil
}

// LinkError says why a line does not follow its predecessor.
type LinkError struct {
	Seq    int64
	Reason string
}

func (e *LinkError) Error() string { return fmt.Sprintf("ledger seq %d: %s", e.Seq, e.Reason) }

// CheckLink checks that l directly follows the line (prevSeq, prevHash) of the
// same run. prevSeq 0 means l must be line 1 with the zero prev_hash.
func CheckLink(prevSeq int64, prevHash, runID, firmID string, l Line) error {
	if l.Seq != prevSeq+1 {
		return &LinkError{Seq: l.Seq, Reason: fmt.Sprintf("expected seq %d", prevSeq+1)}
	}
	if prevSeq == 0 {
		prevHash = ZeroHash
	}
	if l.PrevHash != prevHash {
		return &LinkError{Seq: l.Seq, Reason: "prev_hash does not match the previous line's hash"}
	}
	if prevSeq > 0 && (l.RunID != runID || l.FirmID != firmID) {
		return &LinkError{Seq: l.Seq, Reason: "line belongs to another run or firm"}
	}
	return nil
}

// LineError names the 1-based line number of an NDJSON export that failed.
type LineError struct {
	LineNo int
	Err    error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.LineNo, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// MaxLineBytes bounds one ledger line. DynamoDB's item limit is 400 KB for
// the whole item, names included; the line's item also carries its keys, seq,
// type and created_at (about 150 bytes), so a line keeps a 4 KiB margin.
const MaxLineBytes = 396 * 1024

// ReadLedger parses and chain-verifies an NDJSON ledger, calling fn for each
// line in order. It stops at the first bad line with a *LineError. A ledger
// export's trailing head line (see ReadExport) is a bad line here.
func ReadLedger(r io.Reader, fn func(Line) error) error {
	head, err := ReadExport(r, fn)
	if err == nil && head != nil {
		return &LineError{LineNo: head.lineNo, Err: errors.New("a ledger_head line where only ledger lines are read")}
	}
	return err
}

// HeadLine is a run's signed ledger head as an export carries it: the last
// line of GET /v1/runs/{id}/events?head=true, after the ledger lines. It is
// not a ledger line (no seq of its own, no place in the chain); a reader
// with the ledger key checks its MAC and that the ledger matches it.
type HeadLine struct {
	FirmID string `json:"firm_id"`
	RunID  string `json:"run_id"`
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	MAC    string `json:"mac"`
	KeyID  string `json:"key_id"`

	lineNo int
}

type headLineWire struct {
	LedgerHead *HeadLine `json:"ledger_head"`
}

// EncodeHeadLine renders a head as an export's trailing line (no newline).
func EncodeHeadLine(h HeadLine) []byte {
	b, _ := json.Marshal(headLineWire{LedgerHead: &h}) // strings and an int: cannot fail
	return b
}

var headLinePrefix = []byte(`{"ledger_head":`)

// ReadExport is ReadLedger for an export that may end with a head line,
// which it returns (nil when there is none). The head line must be the last
// line and well formed; what it says is for the caller to check.
func ReadExport(r io.Reader, fn func(Line) error) (*HeadLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes+1)
	var prev Line
	var head *HeadLine
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimRight(sc.Bytes(), "\r")
		switch {
		case head != nil:
			return head, &LineError{LineNo: n, Err: errors.New("a line after the ledger_head line")}
		case len(raw) == 0:
			return nil, &LineError{LineNo: n, Err: errors.New("empty line")}
		case bytes.HasPrefix(raw, headLinePrefix):
			var w headLineWire
			if err := DecodeStrict(raw, &w); err != nil {
				return nil, &LineError{LineNo: n, Err: err}
			}
			h := w.LedgerHead
			if err := h.validate(); err != nil {
				return nil, &LineError{LineNo: n, Err: err}
			}
			h.lineNo, head = n, h
			continue
		}
		l, err := ParseEventLine(bytes.Clone(raw))
		if err != nil {
			return nil, &LineError{LineNo: n, Err: err}
		}
		if err := CheckLink(prev.Seq, prev.Hash, prev.RunID, prev.FirmID, l); err != nil {
			return nil, &LineError{LineNo: n, Err: err}
		}
		if err := fn(l); err != nil {
			return nil, &LineError{LineNo: n, Err: err}
		}
		prev = l
	}
	if err := sc.Err(); err != nil {
		return nil, &LineError{LineNo: n + 1, Err: err}
	}
	return head, nil
}

// LineNo is the export line the head was read from (0 if not read).
func (h *HeadLine) LineNo() int { return h.lineNo }

func (h *HeadLine) validate() error {
	if h == nil {
		return fieldErr("ledger_head", "must not be null")
	}
	if err := CheckUUID("ledger_head.firm_id", h.FirmID); err != nil {
		return err
	}
	if err := CheckUUID("ledger_head.run_id", h.RunID); err != nil {
		return err
	}
	if h.Seq < 1 {
		return fieldErr("ledger_head.seq", "must be at least 1")
	}
	return checkHash("ledger_head.hash", h.Hash)
}
