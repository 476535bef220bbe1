package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Genesis is the chain value before a firm log's first entry.
const Genesis = contracts.ZeroHash

// Entry is one line of a firm's log: the receipt it records (by the SHA-256
// of its body) and, in the clear, the run, seq and kind it covers, so a
// verifier can list a run's receipts without the receipts. At is when it was
// appended; a log's entries never go back in time (the appender takes the
// later of its clock and the last entry's), which is what lets a run's
// bundle prove that no entry of the run lies before its log segment.
type Entry struct {
	Index         int64  `json:"i"`
	At            string `json:"at"`
	RunID         string `json:"run_id"`
	Seq           int64  `json:"seq"`
	Kind          string `json:"kind"`
	ReceiptSHA256 string `json:"receipt_sha256"`
}

// Line is the entry's canonical bytes, the text the chain covers.
func (e Entry) Line() string {
	raw, _ := json.Marshal(e) // strings and ints: cannot fail
	c, _ := contracts.Canonicalize(raw)
	return string(c)
}

// Link is the chain value after an entry: the hex SHA-256 of the previous
// value, a newline and the entry's line, which a shell recomputes with
// `printf '%s\n%s' "$prev" "$line" | sha256sum`.
func Link(prev, line string) string {
	sum := sha256.Sum256([]byte(prev + "\n" + line))
	return hex.EncodeToString(sum[:])
}

// ParseEntry reads an entry line strictly; it must be canonical.
func ParseEntry(line string) (Entry, error) {
	var e Entry
	if err := contracts.DecodeStrict([]byte(line), &e); err != nil {
		return e, err
	}
	if e.Line() != line {
		return e, errors.New("the entry is not canonical JSON (RFC 8785)")
	}
	if e.Index < 1 || e.Seq < 1 || e.RunID == "" || !contracts.IsHash(e.ReceiptSHA256) {
		return e, errors.New("the entry lacks an index, run, seq or receipt hash")
	}
	switch e.Kind {
	case KindStart, KindEffect, KindReconciliation, KindRun, KindDestruction:
	default:
		return e, fmt.Errorf("kind %q is not a receipt kind", e.Kind)
	}
	return e, nil
}

// Checkpoint signs a firm log's size and the chain value after its last
// entry, and chains to the checkpoint before it (Prev: the SHA-256 of its
// body; empty for the first), as CloudTrail's digest files do.
type Checkpoint struct {
	Schema    string `json:"schema"`
	FirmID    string `json:"firm_id"`
	Number    int64  `json:"number"`
	Size      int64  `json:"size"`
	Head      string `json:"head"`
	Prev      string `json:"prev_checkpoint_sha256"`
	CreatedAt string `json:"created_at"`
	KeyID     string `json:"key_id"`
}

// SignCheckpoint signs c with k (filling its schema and key id).
func SignCheckpoint(ctx context.Context, k Signer, c Checkpoint) (Signed, error) {
	c.Schema, c.KeyID = CheckpointSchema, k.KeyID()
	return Sign(ctx, k, c)
}

// OpenCheckpoint checks a signed checkpoint's form and signature.
func OpenCheckpoint(keys KeySet, s Signed) (Checkpoint, error) {
	var c Checkpoint
	if err := open(keys, s, &c, func() string { return c.KeyID }); err != nil {
		return c, err
	}
	if c.Schema != CheckpointSchema {
		return c, fmt.Errorf("schema %q is not %s", c.Schema, CheckpointSchema)
	}
	if c.Number < 1 || c.Size < 0 || !contracts.IsHash(c.Head) || (c.Prev != "" && !contracts.IsHash(c.Prev)) ||
		(c.Number == 1) != (c.Prev == "") {
		return c, errors.New("its number, size, head or previous checkpoint is malformed")
	}
	return c, nil
}

// OpenCheckpointNote checks the signed note s carries, if any, against the
// checkpoint c opened from s's body: a note of origin signed by the key that
// signed c (c.KeyID, among keys), whose size and root are c's size and head.
// It answers whether there was a note.
func OpenCheckpointNote(keys KeySet, s Signed, c Checkpoint, origin string) (bool, error) {
	if s.Note == "" {
		return false, nil
	}
	k, ok := keys[c.KeyID]
	if !ok {
		return true, fmt.Errorf("signed by key %s, which is not among the keys you trust", c.KeyID)
	}
	n, err := VerifyCheckpointNote([]byte(s.Note), origin, k.Key)
	if err != nil {
		return true, err
	}
	if n.Size != c.Size || n.Head != c.Head {
		return true, fmt.Errorf("the note signs %d entries with head %s, checkpoint %d signs %d entries with head %s",
			n.Size, n.Head, c.Number, c.Size, c.Head)
	}
	return true, nil
}

// Segment is a run of consecutive firm log entries: From is the first
// entry's index and Prev the chain value before it (Genesis when From is 1).
type Segment struct {
	From    int64    `json:"from"`
	Prev    string   `json:"prev"`
	Entries []string `json:"entries"`
}

// check walks the segment's chain and requires it to end exactly at the
// checkpoint: its last entry is the checkpoint's last, and the chain value
// after it is the checkpoint's head.
func (s Segment) check(c Checkpoint) ([]Entry, error) {
	if s.From < 1 || !contracts.IsHash(s.Prev) || (s.From == 1 && s.Prev != Genesis) {
		return nil, errors.New("the log segment's start is malformed")
	}
	if s.From+int64(len(s.Entries))-1 != c.Size {
		return nil, fmt.Errorf("the log segment ends at entry %d, checkpoint %d covers %d entries",
			s.From+int64(len(s.Entries))-1, c.Number, c.Size)
	}
	h := s.Prev
	out := make([]Entry, len(s.Entries))
	for i, line := range s.Entries {
		e, err := ParseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("log entry %d: %w", s.From+int64(i), err)
		}
		if e.Index != s.From+int64(i) {
			return nil, fmt.Errorf("log entry %d says it is entry %d", s.From+int64(i), e.Index)
		}
		if i > 0 && e.At < out[i-1].At {
			return nil, fmt.Errorf("log entry %d goes back in time", e.Index)
		}
		h = Link(h, line)
		out[i] = e
	}
	if h != c.Head {
		return nil, fmt.Errorf("the log's chain does not reach checkpoint %d's head: an entry was altered, dropped or added", c.Number)
	}
	return out, nil
}

// LogHead is where a firm's log stands.
type LogHead struct {
	// Size is the number of entries, Head the chain value after the last
	// (Genesis when empty), LastAt the last entry's time.
	Size   int64
	Head   string
	LastAt string
	// Checkpoint is the last checkpoint's number (0: none), CheckpointSHA
	// the SHA-256 of its body and CheckpointSize the entries it covers.
	Checkpoint     int64
	CheckpointSHA  string
	CheckpointSize int64
}

// Errors of a checkpoint store outside the table (an S3 bucket with Object
// Lock; a directory on the local stack).
var (
	// ErrCheckpointExists: a checkpoint of that number is already kept;
	// nothing was written (each number is written once).
	ErrCheckpointExists = errors.New("evidence: a checkpoint of that number is already kept")
	// ErrCheckpointNotKept: no checkpoint of that number is kept.
	ErrCheckpointNotKept = errors.New("evidence: no checkpoint of that number is kept")
	// ErrTimestampExists: the checkpoint's timestamp token is already kept;
	// nothing was written (the first one stands).
	ErrTimestampExists = errors.New("evidence: the checkpoint's timestamp is already kept")
)

// Stored is a receipt as stored with its run.
type Stored struct {
	Seq      int64
	Kind     string
	Signed   Signed
	LogIndex int64
}
