package evidence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// history is a firm log as one signer keeps it: its entries' lines and the
// checkpoints signed over it (number n at checkpoints[n-1]), each chained to
// the one before.
type history struct {
	lines       []string
	checkpoints []evidence.Signed
}

// grow appends n entries of run (a distinct receipt hash per entry and tag,
// so two histories built with different tags differ from their first
// entry) and signs a checkpoint over the whole log.
func (h *history) grow(t *testing.T, k evidence.Signer, n int, tag string) evidence.Signed {
	t.Helper()
	for range n {
		i := int64(len(h.lines)) + 1
		sum := fmt.Sprintf("%064x", i)
		if tag != "" {
			sum = strings.Repeat(tag, 64/len(tag))[:8] + sum[8:]
		}
		e := evidence.Entry{Index: i, At: contracts.FormatTime(fxStart.Add(time.Duration(i) * time.Second)), RunID: fxOtherRun,
			Seq: i, Kind: evidence.KindEffect, ReceiptSHA256: sum}
		h.lines = append(h.lines, e.Line())
	}
	head := evidence.Genesis
	for _, l := range h.lines {
		head = evidence.Link(head, l)
	}
	c := evidence.Checkpoint{FirmID: fxFirm, Number: int64(len(h.checkpoints)) + 1, Size: int64(len(h.lines)), Head: head,
		CreatedAt: contracts.FormatTime(fxStart.Add(time.Hour + time.Duration(len(h.checkpoints))*time.Minute))}
	if len(h.checkpoints) > 0 {
		c.Prev = h.checkpoints[len(h.checkpoints)-1].SHA256()
	}
	s, err := evidence.SignCheckpoint(context.Background(), k, c)
	if err != nil {
		t.Fatal(err)
	}
	h.checkpoints = append(h.checkpoints, s)
	return s
}

// since is what GET /v1/evidence/log?from=from answers of h, ending at its
// last checkpoint: the entries from from, and the checkpoints before the
// last that cover at least from-1 entries.
func (h *history) since(t *testing.T, from int64) (evidence.Checkpoint, evidence.Signed, evidence.Segment, []evidence.Signed) {
	t.Helper()
	last := h.checkpoints[len(h.checkpoints)-1]
	cp := open(t, last)
	prev := evidence.Genesis
	for _, l := range h.lines[:from-1] {
		prev = evidence.Link(prev, l)
	}
	seg := evidence.Segment{From: from, Prev: prev, Entries: h.lines[from-1 : cp.Size]}
	var links []evidence.Signed
	for _, s := range h.checkpoints[:len(h.checkpoints)-1] {
		if from > 1 && open(t, s).Size >= from-1 {
			links = append(links, s)
		}
	}
	return cp, last, seg, links
}

func open(t *testing.T, s evidence.Signed) evidence.Checkpoint {
	t.Helper()
	var c evidence.Checkpoint
	if err := contracts.DecodeStrict([]byte(s.Body), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func held(t *testing.T, keys evidence.KeySet, s evidence.Signed) evidence.Held {
	t.Helper()
	h, err := evidence.OpenHeld(keys, s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestExtends: a newer checkpoint extends a held one through the entries
// appended since and through the checkpoints signed between; each way a
// history can fail to is refused, a fork naming both checkpoints.
func TestExtends(t *testing.T) {
	k, pub := newKey(t)
	keys := evidence.KeySet{}.Add(pub)
	var h history
	h.grow(t, k, 2, "")
	c2 := h.grow(t, k, 2, "") // checkpoint 2: 4 entries
	h.grow(t, k, 2, "")
	h.grow(t, k, 2, "") // checkpoint 4: 8 entries

	t.Run("from the entry after the held checkpoint", func(t *testing.T) {
		cp, s, seg, links := h.since(t, 5)
		ext, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, links)
		if err != nil || ext.Held != 2 || !ext.Linked {
			t.Fatalf("ext %+v, err %v", ext, err)
		}
		if len(links) != 2 {
			t.Fatalf("the answer from entry 5 links checkpoints 2 and 3, got %d", len(links))
		}
	})
	t.Run("from an earlier entry", func(t *testing.T) {
		cp, s, seg, links := h.since(t, 3)
		if ext, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, links); err != nil || !ext.Linked {
			t.Fatalf("ext %+v, err %v", ext, err)
		}
	})
	t.Run("entries alone (a run's bundle carries no checkpoints between)", func(t *testing.T) {
		cp, s, seg, _ := h.since(t, 5)
		if ext, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, nil); err != nil || ext.Linked {
			t.Fatalf("ext %+v, err %v", ext, err)
		}
	})
	t.Run("the next checkpoint links to the held one by itself", func(t *testing.T) {
		var next history
		next.lines, next.checkpoints = h.lines[:6], h.checkpoints[:3]
		cp, s, seg, _ := next.since(t, 5)
		if ext, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, nil); err != nil || !ext.Linked {
			t.Fatalf("checkpoint 3 after the held 2, no links: %+v %v", ext, err)
		}
		// Re-signed to name another checkpoint before it: the entries
		// agree, its own chain does not.
		other := resign(t, k, s, func(c *evidence.Checkpoint) { c.Prev = strings.Repeat("0", 64) })
		if _, err := evidence.Extends(keys, held(t, keys, c2), open(t, other), other.SHA256(), seg, nil); err == nil || !strings.Contains(err.Error(), "as the checkpoint before it") {
			t.Fatalf("checkpoint 3 naming another checkpoint 2: %v", err)
		}
	})
	t.Run("the same checkpoint", func(t *testing.T) {
		if _, err := evidence.Extends(keys, held(t, keys, c2), open(t, c2), c2.SHA256(), evidence.Segment{From: 5, Prev: open(t, c2).Head, Entries: []string{}}, nil); err != nil {
			t.Fatal(err)
		}
	})

	// A rewritten history: the same key signs checkpoints over a log whose
	// third entry differs (a receipt removed and the rest re-appended).
	var r history
	r.grow(t, k, 2, "")
	r.lines = r.lines[:2]
	r.grow(t, k, 2, "ee") // entries 3 and 4 differ
	r.grow(t, k, 2, "ee")
	r.grow(t, k, 3, "ee") // checkpoint 4 of 9 entries

	refusals := []struct {
		name       string
		held       evidence.Signed
		doc        *history
		from       int64
		dropLinks  bool
		check, msg string
	}{
		{"a history rewritten and re-signed", c2, &r, 5, false, "fork", "the log's chain after entry 4"},
		{"a held checkpoint of the rewritten history", r.checkpoints[1], &h, 5, false, "fork", "do not extend each other"},
		{"a log that starts after the held checkpoint", c2, &h, 6, true, "since", "fetch the firm log from entry 5"},
		{"an older checkpoint than the one held", h.checkpoints[3], &history{lines: h.lines[:4], checkpoints: h.checkpoints[:2]}, 3, false, "since", "older than checkpoint 4"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			cp, s, seg, links := c.doc.since(t, c.from)
			if c.dropLinks {
				links = nil
			}
			_, err := evidence.Extends(keys, held(t, keys, c.held), cp, s.SHA256(), seg, links)
			var p *evidence.Problem
			if err == nil || !asProblem(err, &p) || p.Check != c.check || !strings.Contains(p.Msg, c.msg) {
				t.Fatalf("want %s: ...%s..., got %v", c.check, c.msg, err)
			}
			if c.check == "fork" {
				hc := open(t, c.held)
				for _, want := range []string{fmt.Sprintf("checkpoint %d (%d entries, head %s", hc.Number, hc.Size, hc.Head),
					fmt.Sprintf("checkpoint %d (%d entries, head %s", cp.Number, cp.Size, cp.Head)} {
					if !strings.Contains(p.Msg, want) {
						t.Errorf("the fork does not name %q: %s", want, p.Msg)
					}
				}
			}
		})
	}

	t.Run("two checkpoints of one number", func(t *testing.T) {
		var other history
		other.grow(t, k, 2, "")
		o2 := other.grow(t, k, 2, "ee") // checkpoint 2 again, another head
		_, err := evidence.Extends(keys, held(t, keys, c2), open(t, o2), o2.SHA256(), evidence.Segment{From: 3, Prev: open(t, other.checkpoints[0]).Head, Entries: other.lines[2:]}, nil)
		if err == nil || !strings.Contains(err.Error(), "two checkpoints of one number") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a newer checkpoint over fewer entries", func(t *testing.T) {
		var other history
		other.grow(t, k, 2, "")
		other.grow(t, k, 1, "")
		o3 := other.grow(t, k, 0, "") // checkpoint 3 of 3 entries
		_, err := evidence.Extends(keys, held(t, keys, c2), open(t, o3), o3.SHA256(), evidence.Segment{From: 4, Prev: open(t, o3).Head, Entries: []string{}}, nil)
		if err == nil || !strings.Contains(err.Error(), "covers fewer entries") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the entries agree, the checkpoints' chain does not", func(t *testing.T) {
		// Checkpoint 2 re-signed at another time over the same entries, and
		// checkpoints 3 and 4 chained to it: the entries alone cannot tell,
		// the checkpoints' chain can.
		again := history{lines: h.lines, checkpoints: []evidence.Signed{h.checkpoints[0]}}
		for _, s := range h.checkpoints[1:] {
			again.checkpoints = append(again.checkpoints, resign(t, k, s, func(c *evidence.Checkpoint) {
				c.Prev = again.checkpoints[len(again.checkpoints)-1].SHA256()
				if c.Number == 2 {
					c.CreatedAt = "2026-12-03T12:00:00.000Z"
				}
			}))
		}
		cp, s, seg, links := again.since(t, 5)
		if _, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, nil); err != nil {
			t.Fatalf("the entries alone agree: %v", err)
		}
		_, err := evidence.Extends(keys, held(t, keys, c2), cp, s.SHA256(), seg, links)
		if err == nil || !strings.Contains(err.Error(), "as the checkpoint before it") {
			t.Fatalf("got %v", err)
		}
	})
}

// resign signs s's checkpoint again after edit.
func resign(t *testing.T, k evidence.Signer, s evidence.Signed, edit func(*evidence.Checkpoint)) evidence.Signed {
	t.Helper()
	c := open(t, s)
	edit(&c)
	out, err := evidence.SignCheckpoint(context.Background(), k, c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func asProblem(err error, p **evidence.Problem) bool {
	q, ok := err.(*evidence.Problem)
	*p = q
	return ok
}
