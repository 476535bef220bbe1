package evidence

import (
	"fmt"
)

// A verifier who already holds a checkpoint (saved from an earlier bundle)
// can ask of a newer one that it extends the one held: the firm log it
// covers is the held log with entries appended, never rewritten. Two proofs
// say so, and Extends checks both:
//
//   - the entries: the newer bundle's log segment, walked from its start,
//     passes through the held checkpoint's head at the held checkpoint's
//     size (so the segment must start at or before the entry after it:
//     GET /v1/evidence/log?from=<held size + 1>);
//   - the checkpoints: each checkpoint names the SHA-256 of the one before
//     it, so the newer one, followed back through the checkpoints signed
//     between (LogBundle.Checkpoints), reaches exactly the held one.
//
// Anything else is a fork: two checkpoints of one firm's log, signed by the
// firm's key, that do not extend each other (a history rewritten and signed
// again, or two histories shown to two verifiers). It is refused naming
// both.

// Held is a checkpoint a verifier already holds, opened (OpenHeld).
type Held struct {
	Checkpoint Checkpoint
	SHA256     string
}

// OpenHeld checks a checkpoint the verifier holds: its signature under keys.
func OpenHeld(keys KeySet, s Signed) (Held, error) {
	c, err := OpenCheckpoint(keys, s)
	if err != nil {
		return Held{}, err
	}
	return Held{Checkpoint: c, SHA256: s.SHA256()}, nil
}

// describe names a checkpoint in a refusal: its number, size, head and the
// SHA-256 of its body (what the next checkpoint names).
func describe(c Checkpoint, sha string) string {
	return fmt.Sprintf("checkpoint %d (%d entries, head %s, sha256 %s)", c.Number, c.Size, c.Head, sha)
}

// Extension is what Extends proved.
type Extension struct {
	// Held is the number of the held checkpoint the bundle's extends.
	Held int64 `json:"checkpoint"`
	// Linked: the checkpoints' own chain was followed from the bundle's
	// checkpoint back to the held one (false when there are checkpoints
	// between them and the document carries none: a run's bundle; the
	// entries alone prove it).
	Linked bool `json:"linked"`
}

// Extends checks that checkpoint cp (whose body's SHA-256 is sha), reached
// by segment seg (already checked to end at cp's head: Segment.check) and
// linked by links (the checkpoints signed before cp, oldest first; may be
// empty), extends the checkpoint held.
func Extends(keys KeySet, held Held, cp Checkpoint, sha string, seg Segment, links []Signed) (Extension, error) {
	h := held.Checkpoint
	ext := Extension{Held: h.Number}
	fork := func(why string) error {
		return problem("fork", "%s and %s do not extend each other: %s", describe(h, held.SHA256), describe(cp, sha), why)
	}
	switch {
	case h.FirmID != cp.FirmID:
		return ext, problem("since", "the checkpoint you hold is firm %s's, this one firm %s's", h.FirmID, cp.FirmID)
	case cp.Number == h.Number && sha == held.SHA256:
		return ext, nil // the same checkpoint
	case cp.Number == h.Number:
		return ext, fork("two checkpoints of one number")
	case cp.Number < h.Number && cp.Size > h.Size:
		return ext, fork("the older checkpoint covers more entries")
	case cp.Number < h.Number:
		return ext, problem("since", "this document ends at checkpoint %d, older than checkpoint %d you hold: ask for it as of checkpoint %d or later (?checkpoint=)",
			cp.Number, h.Number, h.Number)
	case cp.Size < h.Size:
		return ext, fork("the newer checkpoint covers fewer entries")
	}
	// The entries: the chain value after entry h.Size.
	before := seg.From - 1 // the entries before the segment
	if before > h.Size {
		return ext, problem("since", "this document's firm log starts at entry %d, after the %d entries of checkpoint %d you hold: fetch the firm log from entry %d (GET /v1/evidence/log?from=%d)",
			seg.From, h.Size, h.Number, h.Size+1, h.Size+1)
	}
	v := seg.Prev
	for _, line := range seg.Entries[:h.Size-before] {
		v = Link(v, line)
	}
	if v != h.Head {
		return ext, fork(fmt.Sprintf("the log's chain after entry %d is %s, not the held checkpoint's head", h.Size, v))
	}
	// The checkpoints' own chain, when the document carries it.
	byNumber := map[int64]Signed{}
	for i, s := range links {
		c, err := OpenCheckpoint(keys, s)
		if err != nil {
			return ext, problem("checkpoints", "the document's checkpoint %d of %d: %v", i+1, len(links), err)
		}
		if c.FirmID != cp.FirmID {
			return ext, problem("checkpoints", "checkpoint %d is firm %s's", c.Number, c.FirmID)
		}
		byNumber[c.Number] = s
	}
	cur := cp
	for cur.Number > h.Number+1 {
		s, ok := byNumber[cur.Number-1]
		switch {
		case !ok && len(links) == 0:
			return ext, nil // a run's bundle: the entries alone prove it
		case !ok:
			return ext, problem("checkpoints", "the document carries no checkpoint %d, between checkpoint %d you hold and checkpoint %d", cur.Number-1, h.Number, cp.Number)
		}
		prev, _ := OpenCheckpoint(keys, s) // opened above
		if s.SHA256() != cur.Prev {
			return ext, problem("checkpoints", "checkpoint %d names checkpoint %d's SHA-256 as %s, the document's checkpoint %d is %s",
				cur.Number, cur.Number-1, cur.Prev, prev.Number, s.SHA256())
		}
		if prev.Size > cur.Size {
			return ext, problem("checkpoints", "checkpoint %d covers %d entries, more than checkpoint %d after it", prev.Number, prev.Size, cur.Number)
		}
		cur = prev
	}
	if cur.Prev != held.SHA256 {
		return ext, fork(fmt.Sprintf("checkpoint %d names %s as the checkpoint before it", cur.Number, cur.Prev))
	}
	ext.Linked = true
	return ext, nil
}
