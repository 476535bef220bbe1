package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// SchemaVersionSealed is the stored form of a line whose privileged members
// are sealed under the run's data key (issue 26): the line of schema 1 with
// each member that SealedMembers names replaced, where present, by its
// sealed form (pkg/seal: {"ct":"<base64>","sealed":"v1"} once canonical).
// The header, every other member, the hash and the chain are as in schema
// 1, and the hash covers the stored form, so the chain, the signed head,
// receipts and evidence verify with or without the key, and after it is
// destroyed.
const SchemaVersionSealed = "2"

// Sealer seals one privileged value for a field (*seal.RunKey is one): the
// result is the stored form, itself a JSON value.
type Sealer interface {
	SealJSON(field string, raw json.RawMessage) (json.RawMessage, error)
}

// Opener opens a value Sealer sealed for the same field (*seal.RunKey is
// one) and returns exactly the bytes that were sealed.
type Opener interface {
	OpenJSON(field string, stored json.RawMessage) (json.RawMessage, error)
}

// SealedMembers names, by event type, the payload members that are
// privileged content (counsel's words, tool inputs and edits, results, the
// model's words, notes), sealed in a schema 2 line. Everything else (ids,
// hashes, times, tiers, rules, costs, statuses, the policy's metadata and
// the sanitized failure) stays in the clear: the reducer, stream-reduce, the
// sweeper and the evidence verifier read a line without its key. A path is
// relative to the payload; "approval.tool_input" is a member of the
// "approval" object.
var SealedMembers = map[EventType][]string{
	TypeRunStarted:       {"history", "counsel_message"},
	TypeTurnDelta:        {"text"},
	TypeTurnCompleted:    {"text", "content"},
	TypeToolRequested:    {"input"},
	TypeToolCompleted:    {"result"},
	TypeRunBlocked:       {"approval.tool_input", "approval.human_summary"},
	TypeApprovalDecided:  {"note", "edited_input"},
	TypeRunCompleted:     {"final_text"},
	TypeEffectReconciled: {"note"},
	// content.destroyed has none: it is written as its run's key is
	// destroyed, and says only who, when and why.
}

// SealedField is the name a line's sealed member is sealed under (the
// field of the value's additional data, beside the firm and the run): the
// line's seq and the member's path, so a sealed value copied to another
// line or member does not open.
func SealedField(seq int64, path string) string {
	return "ledger/" + strconv.FormatInt(seq, 10) + "/payload." + path
}

// ErrNotOpened is returned for content asked of a line whose privileged
// members are sealed and were not opened.
var ErrNotOpened = errors.New("contracts: the line's content is sealed and was not opened")

// EncodeSealedLine is EncodeLine for a run whose content is sealed: the
// event is validated as EncodeLine does (digests re-derived from the
// plaintext), then each privileged member is sealed by s in its canonical
// form, and the line is stored as schema 2. The returned Line carries the
// plaintext event (for the writer) and the stored bytes in Raw.
func EncodeSealedLine(l Line, e Event, s Sealer) (Line, error) {
	if s == nil {
		return Line{}, errors.New("contracts: EncodeSealedLine needs a sealer")
	}
	return encodeLine(l, e, s)
}

// sealPayload seals, in place, each privileged member of a line's payload
// (SealedMembers) in its canonical form, for the line at seq.
func sealPayload(payload []byte, t EventType, seq int64, s Sealer) ([]byte, error) {
	paths := SealedMembers[t]
	if len(paths) == 0 {
		return payload, nil
	}
	pn, _, err := parseCanonical(payload)
	if err != nil {
		return nil, fmt.Errorf("contracts: encode %s payload: %w", t, err)
	}
	payload, err = rewriteMembers(payload, pn, "", paths, func(path string, v []byte) ([]byte, error) {
		c, err := Canonicalize(v)
		if err != nil {
			return nil, err
		}
		return s.SealJSON(SealedField(seq, path), c)
	})
	if err != nil {
		return nil, fmt.Errorf("contracts: seal %s payload: %w", t, err)
	}
	return payload, nil
}

// OpenLine opens a line's sealed members with o and returns the line with
// its full event, checked as a schema 1 line is (types, rules, digests
// re-derived from the plaintext). Raw, Hash and SchemaVersion stay the
// stored form's. A line with nothing sealed is returned as it is. An error
// from o is returned wrapped (errors.Is finds the seal package's
// ErrKeyUnavailable or ErrCannotOpen); a sealed member that opens to
// something the event cannot hold is a *FieldError.
func OpenLine(l Line, o Opener) (Line, error) {
	if !l.Sealed {
		return l, nil
	}
	if o == nil {
		return Line{}, fmt.Errorf("seq %d: %w", l.Seq, ErrNotOpened)
	}
	root, _, err := parseCanonical(l.Raw)
	if err != nil {
		return Line{}, err
	}
	payload := member(root, "payload")
	if payload == nil {
		return Line{}, fieldErr("payload", "required field is missing")
	}
	opened, err := rewriteMembers(l.Raw, payload, "", SealedMembers[l.Type], func(path string, v []byte) ([]byte, error) {
		pt, err := o.OpenJSON(SealedField(l.Seq, path), v)
		if err != nil {
			return nil, fmt.Errorf("seq %d payload.%s: %w", l.Seq, path, err)
		}
		return pt, nil
	})
	if err != nil {
		return Line{}, err
	}
	ev, err := decodePayload(opened, l.Type)
	if err != nil {
		return Line{}, err
	}
	if d, ok := ev.(digester); ok {
		if err := d.checkDigests(); err != nil {
			return Line{}, err
		}
	}
	l.Event, l.Sealed = ev, false
	return l, nil
}

// decodePayload strictly decodes a payload document (the bytes of one JSON
// object) as the event of type t and validates it.
func decodePayload(doc []byte, t EventType) (Event, error) {
	n, _, err := parseCanonical(doc)
	if err != nil {
		return nil, prefixed("payload", err)
	}
	ev := reflect.New(eventTypes[t]).Interface().(Event)
	if err := checkNode(n, reflect.TypeOf(ev).Elem(), "payload"); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(doc, ev); err != nil {
		return nil, fieldErr("payload", "a value has an invalid form")
	}
	if err := ev.validate(); err != nil {
		return nil, err
	}
	return ev, nil
}

// parseSealedPayload reads a schema 2 line's payload without its key: each
// privileged member present must be in the sealed form (a plain value
// where a sealed one must be is refused, not passed on), and the event is
// decoded with those members empty. The caller checks the line's hash.
func parseSealedPayload(raw []byte, payload *node, t EventType) (Event, error) {
	if payload == nil || payload.kind != '{' {
		return nil, fieldErr("payload", "must be an object")
	}
	blanked, err := rewriteMembers(raw, payload, "", SealedMembers[t], func(path string, v []byte) ([]byte, error) {
		if !isSealedForm(v) {
			return nil, fieldErr("payload."+path, "must be sealed in a schema %s line", SchemaVersionSealed)
		}
		return blankFor(t, path), nil
	})
	if err != nil {
		return nil, err
	}
	ev, err := decodePayload(blanked, t)
	if err != nil {
		return nil, err
	}
	clearSealed(ev)
	return ev, nil
}

// blankFor is the value a sealed member is read as before it is opened: ""
// for text, null for documents and lists.
func blankFor(t EventType, path string) []byte {
	switch path {
	case "history", "content", "input", "result", "approval.tool_input", "edited_input":
		return []byte("null")
	}
	return []byte(`""`)
}

// clearSealed empties the privileged members of an event decoded with
// blanks (json.RawMessage keeps a "null" it was given).
func clearSealed(e Event) {
	switch e := e.(type) {
	case *RunStarted:
		e.History, e.CounselMessage = nil, ""
	case *TurnDelta:
		e.Text = ""
	case *TurnCompleted:
		e.Text, e.Content = "", nil
	case *ToolRequested:
		e.Input = nil
	case *ToolCompleted:
		e.Result = nil
	case *RunBlocked:
		e.Approval.ToolInput, e.Approval.HumanSummary = nil, ""
	case *ApprovalDecided:
		e.Note, e.EditedInput = "", nil
	case *RunCompleted:
		e.FinalText = ""
	case *EffectReconciled:
		e.Note = ""
	}
}

// isSealedForm reports whether v is a sealed value's stored form: an object
// of exactly "ct" (a string) and "sealed" (a string). Whether it opens, and
// whether its version is known, is the opener's to say.
func isSealedForm(v []byte) bool {
	n, _, err := parseCanonical(v)
	if err != nil || n.kind != '{' || len(n.keys) != 2 {
		return false
	}
	ct, sealed := member(n, "ct"), member(n, "sealed")
	return ct != nil && sealed != nil && ct.kind == '"' && sealed.kind == '"'
}

// member returns the value of obj's member named key, or nil.
func member(obj *node, key string) *node {
	if obj == nil || obj.kind != '{' {
		return nil
	}
	for i, k := range obj.keys {
		if k == key {
			return obj.vals[i]
		}
	}
	return nil
}

// rewriteMembers returns the object obj (inside raw) as new bytes, with
// the value of each member named in paths that is present (a path "a.b" is
// member b of member a, itself an object) replaced by what fn returns for
// it. Other members are copied as they are, in order.
func rewriteMembers(raw []byte, obj *node, prefix string, paths []string, fn func(path string, v []byte) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, obj.end-obj.start+64*len(paths))
	out = append(out, '{')
	for i, key := range obj.keys {
		v := obj.vals[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, raw[obj.keyStarts[i]:v.start]...) // "key":
		path := key
		if prefix != "" {
			path = prefix + "." + key
		}
		var val []byte
		switch {
		case contains(paths, path):
			r, err := fn(path, raw[v.start:v.end])
			if err != nil {
				return nil, err
			}
			val = r
		case v.kind == '{' && hasPrefixPath(paths, path):
			r, err := rewriteMembers(raw, v, path, paths, fn)
			if err != nil {
				return nil, err
			}
			val = r
		default:
			val = raw[v.start:v.end]
		}
		out = append(out, val...)
	}
	return append(out, '}'), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasPrefixPath(paths []string, prefix string) bool {
	for _, p := range paths {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix && p[len(prefix)] == '.' {
			return true
		}
	}
	return false
}

// OpenedJSON is a line for a reader of its content (the desk, GET
// /v1/runs/{id}/events?open=true): its header and hash as stored, its
// payload the opened event, and "opened": true. It is not the stored line
// and does not verify (its hash is the stored form's); the stored line is
// l.Raw. l must have been opened (OpenLine): a sealed one is ErrNotOpened.
func OpenedJSON(l Line) ([]byte, error) {
	if l.Sealed {
		return nil, fmt.Errorf("seq %d: %w", l.Seq, ErrNotOpened)
	}
	payload, err := json.Marshal(l.Event)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		lineWire
		Opened bool `json:"opened"`
	}{lineWire{SchemaVersion: l.SchemaVersion, Seq: l.Seq, RunID: l.RunID, FirmID: l.FirmID, Type: l.Type,
		CreatedAt: l.CreatedAt, PrevHash: l.PrevHash, Hash: l.Hash, Payload: payload}, true})
}
