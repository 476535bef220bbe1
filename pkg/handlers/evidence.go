package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// EvidenceStore is the store's evidence part (pkg/dynamo's Store).
type EvidenceStore interface {
	reducer.Source
	AppendReceipt(ctx context.Context, firm, run string, seq int64, kind string, rc evidence.Signed) (evidence.Entry, bool, error)
	Receipts(ctx context.Context, firm, run string) ([]evidence.Stored, error)
	LogHead(ctx context.Context, firm string) (evidence.LogHead, error)
	LogSegment(ctx context.Context, firm string, from, to int64) (evidence.Segment, error)
	LogIndexBefore(ctx context.Context, firm string, t time.Time, size int64) (int64, error)
	Checkpoint(ctx context.Context, firm string, n int64) (evidence.Signed, error)
	Checkpoints(ctx context.Context, firm string, from, to int64) ([]evidence.Signed, error)
	PutCheckpoint(ctx context.Context, firm string, h evidence.LogHead, cp evidence.Checkpoint, signed evidence.Signed) error
	DueLogs(ctx context.Context, limit int) ([]string, error)
	// PutCheckpointTimestamp keeps checkpoint n's timestamp token (base64),
	// once (evidence.ErrTimestampExists).
	PutCheckpointTimestamp(ctx context.Context, firm string, n int64, token string) error
	// AddCheckpointCosignatures appends witnesses' signature lines to
	// checkpoint n.
	AddCheckpointCosignatures(ctx context.Context, firm string, n int64, lines []string) error
	// CheckpointSettled takes the head off the due logs when checkpoint n
	// is its latest and covers every entry.
	CheckpointSettled(ctx context.Context, firm string, n int64) error
}

// CheckpointSink keeps each checkpoint where nobody with table access can
// rewrite it (an S3 bucket with Object Lock, pkg/anchor's S3Sink; a
// directory on the local stack, DirSink), and gives them back to the signer.
type CheckpointSink interface {
	// PutCheckpoint keeps signed as checkpoint number of firm's log, once:
	// evidence.ErrCheckpointExists when that number is kept already.
	PutCheckpoint(ctx context.Context, firm string, number int64, signed evidence.Signed) error
	// Checkpoint reads a kept checkpoint (evidence.ErrCheckpointNotKept).
	Checkpoint(ctx context.Context, firm string, number int64) (evidence.Signed, error)
	// After answers the lowest number kept above number, if any.
	After(ctx context.Context, firm string, number int64) (int64, bool, error)
	// PutTimestamp keeps checkpoint number's timestamp token (DER) beside
	// it, once: evidence.ErrTimestampExists when one is kept already.
	PutTimestamp(ctx context.Context, firm string, number int64, token []byte) error
}

// Evidence issues receipts (stream-reduce), signs the firm logs'
// checkpoints (the sweeper) and assembles bundles (the runs routes).
type Evidence struct {
	Store EvidenceStore
	// Signer signs receipts and checkpoints (nil in a function that only
	// reads evidence).
	Signer evidence.Signer
	// Keys are the public keys receipts are checked against and GET
	// /v1/keys publishes: the signer's and, after a rotation, the retired
	// ones.
	Keys evidence.KeySet
	// Current is the id of the key signing now (the others in Keys are
	// retired).
	Current string
	// Sink also keeps each checkpoint outside the table (nil: the table
	// only).
	Sink CheckpointSink
	// OriginPrefix names the origin each checkpoint is also signed under
	// as a C2SP signed note (evidence.Origin; "": the default).
	OriginPrefix string
	// TSA timestamps each latest checkpoint (attest.go; nil: the firm
	// configured no time-stamping authority).
	TSA Stamper
	// Witnesses each cosign each latest checkpoint (attest.go; none: the
	// firm configured none), asked with WitnessClient (nil: the default).
	Witnesses     []Witness
	WitnessClient *http.Client
	Now           func() time.Time
	Logger        *failure.Logger
}

func (e *Evidence) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

// IssueReceipts signs and logs the receipts the ledger lines after seq
// after call for. lines is the run's ledger from line 1 (parsed, linked and
// held to its signed head by the caller's fold). A receipt already issued
// for a line stands (a redelivered record issues nothing new). It answers
// how many it issued.
func (e *Evidence) IssueReceipts(ctx context.Context, firm, run string, lines []contracts.Line, after int64) (int, error) {
	if e == nil || e.Signer == nil {
		return 0, nil
	}
	derived, err := evidence.Derive(lines)
	if err != nil {
		return 0, failure.Wrap(failure.KindLedgerCorrupt, "", err)
	}
	n := 0
	for _, r := range derived {
		if r.Seq <= after {
			continue
		}
		signed, err := evidence.Issue(ctx, e.Signer, r, contracts.FormatTime(e.now()))
		if err != nil {
			return n, signingFailed(err)
		}
		if _, appended, err := e.Store.AppendReceipt(ctx, firm, run, r.Seq, r.Kind, signed); err != nil {
			return n, err
		} else if appended {
			n++
		}
	}
	return n, nil
}

// signingFailed marks a key that could not sign now: an outage of a
// dependency (KMS), retried, not a verdict on the ledger.
func signingFailed(err error) error {
	var k failure.Kinder
	if errors.As(err, &k) {
		return err
	}
	return failure.Transient(failure.KindStoreUnavailable, 2*time.Second, fmt.Errorf("evidence: sign: %w", err))
}

// Checkpoint signs a checkpoint of firm's log if entries were appended since
// the last one: its size and chain head, chained to the previous checkpoint.
// It signs only a log that extends the last checkpoint it signed, as kept
// outside the table (Sink), never as the table says: the entries appended
// since are walked again from that checkpoint's head, and must reach the
// table's head. A table whose log was rolled back, forked or lost a
// checkpoint is refused with failure.KindLogDiverged (logged by
// CheckpointDue: an alarm), and nothing is signed. A checkpoint kept outside
// the table that the table missed (the signer stopped between its two
// writes) is restored to it first. made is false when there was nothing new
// or another signer got there first (the next pass tries again).
func (e *Evidence) Checkpoint(ctx context.Context, firm string) (n int64, made bool, err error) {
	if e.Sink == nil {
		return 0, false, failure.New(failure.KindConfigInvalid, "the sweeper has no checkpoint store outside the table (CHECKPOINT_BUCKET)")
	}
	h, err := e.Store.LogHead(ctx, firm)
	if err != nil {
		return 0, false, err
	}
	base, err := e.lastSigned(ctx, firm, h)
	if err != nil || base.Size == h.Size {
		return base.Number, false, err
	}
	head, err := e.walk(ctx, firm, base, h.Size)
	if err != nil {
		return base.Number, false, err
	}
	if head != h.Head {
		return base.Number, false, diverged("the log's entries %d to %d do not chain to the head the table holds", base.Size+1, h.Size)
	}
	cp := evidence.Checkpoint{FirmID: firm, Number: base.Number + 1, Size: h.Size, Head: head, Prev: base.SHA,
		CreatedAt: contracts.FormatTime(e.now())}
	signed, err := evidence.SignCheckpoint(ctx, e.Signer, cp)
	if err != nil {
		return base.Number, false, signingFailed(err)
	}
	// The same checkpoint as a signed note (tlog-checkpoint), kept with
	// it: one object, written once, so the note and the JSON never part.
	if signed.Note, err = evidence.SignCheckpointNote(ctx, e.Signer, evidence.Origin(e.OriginPrefix, firm), cp); err != nil {
		return base.Number, false, signingFailed(err)
	}
	// Outside the table first, once per number: a checkpoint the table
	// holds is always kept there too, and a second signer of the same
	// number (a race) is refused there.
	if err := e.Sink.PutCheckpoint(ctx, firm, cp.Number, signed); err != nil {
		if errors.Is(err, evidence.ErrCheckpointExists) {
			return base.Number, false, nil
		}
		return base.Number, false, err
	}
	if err := e.Store.PutCheckpoint(ctx, firm, h, cp, signed); err != nil {
		if errors.Is(err, warrant.ErrLogMoved) {
			return base.Number, false, nil // the next pass restores it from the sink
		}
		return base.Number, false, err
	}
	return cp.Number, true, nil
}

// signedCheckpoint is a checkpoint the signer vouches for.
type signedCheckpoint struct {
	Number, Size int64
	Head, SHA    string
}

// diverged is the refusal to sign over a log that does not extend the
// last checkpoint kept outside the table.
func diverged(format string, args ...any) error {
	return failure.New(failure.KindLogDiverged, fmt.Sprintf("the firm log diverged: "+format, args...))
}

// lastSigned is the last checkpoint kept outside the table, which the
// table's head must name (h.Checkpoint, h.CheckpointSHA). A kept checkpoint
// the table lacks is restored to it when the table's log extends to it
// (h is then read again); any other disagreement is a divergence.
func (e *Evidence) lastSigned(ctx context.Context, firm string, h evidence.LogHead) (signedCheckpoint, error) {
	base := signedCheckpoint{Head: evidence.Genesis}
	if h.Checkpoint > 0 {
		kept, err := e.Sink.Checkpoint(ctx, firm, h.Checkpoint)
		if errors.Is(err, evidence.ErrCheckpointNotKept) {
			return base, diverged("the table's checkpoint %d is not kept outside the table", h.Checkpoint)
		} else if err != nil {
			return base, err
		}
		if kept.SHA256() != h.CheckpointSHA {
			return base, diverged("the table's checkpoint %d is not the one kept outside the table", h.Checkpoint)
		}
		cp, err := e.open(kept, firm, h.Checkpoint)
		if err != nil {
			return base, err
		}
		base = signedCheckpoint{Number: cp.Number, Size: cp.Size, Head: cp.Head, SHA: kept.SHA256()}
	}
	for {
		next, found, err := e.Sink.After(ctx, firm, base.Number)
		if err != nil || !found {
			return base, err
		}
		if next != base.Number+1 {
			return base, diverged("checkpoint %d is kept outside the table, the table's last is %d", next, base.Number)
		}
		kept, err := e.Sink.Checkpoint(ctx, firm, next)
		if err != nil {
			return base, err
		}
		cp, err := e.open(kept, firm, next)
		if err != nil {
			return base, err
		}
		if cp.Prev != base.SHA || cp.Size < base.Size || cp.Size > h.Size {
			return base, diverged("checkpoint %d, kept outside the table, does not follow the table's checkpoint %d and log (%d entries)", next, base.Number, h.Size)
		}
		head, err := e.walk(ctx, firm, base, cp.Size)
		if err != nil {
			return base, err
		}
		if head != cp.Head {
			return base, diverged("the log's entries %d to %d do not reach checkpoint %d, kept outside the table: the log was rolled back or rewritten", base.Size+1, cp.Size, next)
		}
		if err := e.Store.PutCheckpoint(ctx, firm, h, cp, kept); err != nil {
			return base, err // ErrLogMoved: the next pass sees the new head
		}
		base = signedCheckpoint{Number: cp.Number, Size: cp.Size, Head: cp.Head, SHA: kept.SHA256()}
		if h, err = e.Store.LogHead(ctx, firm); err != nil {
			return base, err
		}
	}
}

// open checks a kept checkpoint: signed by a trusted key, of this firm and
// number.
func (e *Evidence) open(kept evidence.Signed, firm string, number int64) (evidence.Checkpoint, error) {
	cp, err := evidence.OpenCheckpoint(e.Keys, kept)
	if err != nil {
		return cp, diverged("checkpoint %d as kept outside the table does not verify: %v", number, err)
	}
	if cp.FirmID != firm || cp.Number != number {
		return cp, diverged("checkpoint %d as kept outside the table is firm %s's number %d", number, cp.FirmID, cp.Number)
	}
	return cp, nil
}

// walk re-reads the firm log's entries after base up to entry to and
// chains them from base's head, checking each entry's form, index and time
// order: the head they reach.
func (e *Evidence) walk(ctx context.Context, firm string, base signedCheckpoint, to int64) (string, error) {
	if to < base.Size {
		return "", diverged("the table's log holds %d entries, checkpoint %d covers %d", to, base.Number, base.Size)
	}
	h := base.Head
	if to == base.Size {
		return h, nil
	}
	seg, err := e.Store.LogSegment(ctx, firm, base.Size+1, to)
	if errors.Is(err, warrant.ErrNotFound) {
		return "", diverged("entries %d to %d of the log are missing", base.Size+1, to)
	} else if err != nil {
		return "", err
	}
	last := ""
	for i, line := range seg.Entries {
		entry, err := evidence.ParseEntry(line)
		if err != nil {
			return "", diverged("log entry %d: %v", base.Size+1+int64(i), err)
		}
		if entry.Index != base.Size+1+int64(i) || entry.At < last {
			return "", diverged("log entry %d is out of place or goes back in time", base.Size+1+int64(i))
		}
		last = entry.At
		h = evidence.Link(h, line)
	}
	return h, nil
}

// CheckpointPass is what a sweep's CheckpointDue did: checkpoints made
// and failed (each failure logged, no content), and of the attestations
// (attest) the timestamp tokens and cosignatures kept and the attempts that
// failed (logged, asked again next sweep).
type CheckpointPass struct {
	Made, Failed                         int
	Timestamps, Cosignatures, Unattested int
}

// CheckpointDue checkpoints every firm log with entries no checkpoint
// covers (at most limit firms) and has each one's latest checkpoint
// timestamped and cosigned by the firm's witnesses (attest).
func (e *Evidence) CheckpointDue(ctx context.Context, limit int) (CheckpointPass, error) {
	var p CheckpointPass
	firms, err := e.Store.DueLogs(ctx, limit)
	if err != nil {
		return p, err
	}
	a := e.attesters()
	for _, firm := range firms {
		_, ok, err := e.Checkpoint(ctx, firm)
		switch {
		case err != nil:
			p.Failed++
			e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "checkpoint", failure.Identity{FirmID: firm}))
			continue
		case ok:
			p.Made++
		}
		if a.any() {
			e.attest(ctx, firm, a)
		}
	}
	p.Timestamps, p.Cosignatures, p.Unattested = a.timestamps, a.cosignatures, a.failed
	return p, nil
}

// Bundle assembles a run's evidence as the table holds it, judging nothing
// (the verifier does): the ledger's lines and signed head, the receipts a
// checkpoint covers, the firm log from the run's start receipt's entry to
// that checkpoint, and the checkpoint (none while the run's start is not
// under one). at picks
// the checkpoint (0: the latest); a run of another firm is not found.
func (e *Evidence) Bundle(ctx context.Context, firm, run string, at int64) (evidence.Bundle, error) {
	b := evidence.Bundle{Schema: evidence.BundleSchema, FirmID: firm, RunID: run, Ledger: []string{}, Receipts: []evidence.Signed{},
		Log: evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: []string{}}, KeyIDs: e.Keys.IDs()}
	item, err := e.Store.GetRun(ctx, firm, run)
	if err != nil {
		return b, err
	}
	items, _, err := e.Store.ReadLedger(ctx, firm, run, 0, 0)
	if err != nil {
		return b, err
	}
	if len(items) == 0 {
		return b, warrant.ErrNotFound
	}
	for _, it := range items {
		b.Ledger = append(b.Ledger, string(it.Raw))
	}
	if item.Head.Seq > 0 {
		b.Head = &contracts.HeadLine{FirmID: firm, RunID: run, Seq: item.Head.Seq, Hash: item.Head.Hash, MAC: item.Head.MAC, KeyID: item.Head.KeyID}
	}
	h, err := e.Store.LogHead(ctx, firm)
	if err != nil {
		return b, err
	}
	n := h.Checkpoint
	if at > 0 {
		if at > h.Checkpoint {
			return b, failure.New(failure.KindNotFound, "no such checkpoint yet")
		}
		n = at
	}
	if n == 0 {
		return b, nil // no checkpoint yet: the bundle says so
	}
	signed, err := e.Store.Checkpoint(ctx, firm, n)
	if err != nil {
		return b, err
	}
	var cp evidence.Checkpoint
	if err := contracts.DecodeStrict([]byte(signed.Body), &cp); err != nil {
		return b, failure.Wrap(failure.KindLedgerCorrupt, "", err)
	}
	stored, err := e.Store.Receipts(ctx, firm, run)
	if err != nil {
		return b, err
	}
	// The segment starts at the run's start receipt's entry, the run's
	// first in the log; a run started before starts were anchored has none,
	// and its segment starts Skew before its first line.
	var from int64
	for _, r := range stored {
		if r.Kind == evidence.KindStart {
			from = r.LogIndex
		}
	}
	if from > cp.Size {
		return b, nil // the run's start is not under a checkpoint yet
	}
	if from == 0 {
		first, err := contracts.ParseLineHeader(items[0].Raw)
		if err != nil {
			return b, failure.Wrap(failure.KindLedgerCorrupt, "", err)
		}
		started, _ := time.Parse(contracts.TimeLayout, first.CreatedAt)
		if from, err = e.Store.LogIndexBefore(ctx, firm, started.Add(-evidence.Skew), cp.Size); err != nil {
			return b, err
		}
	}
	b.Checkpoint = &signed
	if b.Log, err = e.Store.LogSegment(ctx, firm, max(from, 1), cp.Size); err != nil {
		return b, err
	}
	for _, r := range stored {
		if r.LogIndex <= cp.Size {
			b.Receipts = append(b.Receipts, r.Signed)
		}
	}
	return b, nil
}

// MaxLogEntries bounds one GET /v1/evidence/log answer (an entry is about
// 200 bytes; a Lambda answer at most 6 MB).
const MaxLogEntries = 20000

// LogBundle assembles the firm log's entries from..the checkpoint at (0:
// the latest) with that checkpoint.
func (e *Evidence) LogBundle(ctx context.Context, firm string, from, at int64) (evidence.LogBundle, error) {
	lb := evidence.LogBundle{Schema: evidence.LogSchema, FirmID: firm, Log: evidence.Segment{From: from, Prev: evidence.Genesis, Entries: []string{}},
		KeyIDs: e.Keys.IDs()}
	h, err := e.Store.LogHead(ctx, firm)
	if err != nil {
		return lb, err
	}
	n := h.Checkpoint
	if at > 0 {
		if at > h.Checkpoint {
			return lb, failure.New(failure.KindNotFound, "no such checkpoint yet")
		}
		n = at
	}
	if n == 0 {
		return lb, nil
	}
	signed, err := e.Store.Checkpoint(ctx, firm, n)
	if err != nil {
		return lb, err
	}
	var cp evidence.Checkpoint
	if err := contracts.DecodeStrict([]byte(signed.Body), &cp); err != nil {
		return lb, failure.Wrap(failure.KindLedgerCorrupt, "", err)
	}
	if from > cp.Size+1 {
		return lb, inRequest(failure.New(failure.KindInvalidRequest, fmt.Sprintf("from: checkpoint %d covers entries 1 to %d", n, cp.Size)))
	}
	if cp.Size-from+1 > MaxLogEntries {
		return lb, inRequest(failure.New(failure.KindInvalidRequest,
			fmt.Sprintf("from: at most %d entries an answer; ask from=%d, or an earlier checkpoint", MaxLogEntries, cp.Size-MaxLogEntries+1)))
	}
	lb.Checkpoint = &signed
	if lb.Log, err = e.Store.LogSegment(ctx, firm, from, cp.Size); err != nil || from == 1 {
		return lb, err
	}
	// The checkpoints that link one a verifier holds, covering at least
	// the entries before from, to this one (evidence.Extends).
	first, err := e.firstCovering(ctx, firm, from-1, n)
	if err != nil || first == n {
		return lb, err
	}
	if n-first > MaxLogCheckpoints {
		return lb, inRequest(failure.New(failure.KindInvalidRequest,
			fmt.Sprintf("from: %d checkpoints were signed after entry %d; at most %d an answer: ask with checkpoint=%d, then from the entry after it",
				n-first, from-1, MaxLogCheckpoints, first+MaxLogCheckpoints)))
	}
	lb.Checkpoints, err = e.Store.Checkpoints(ctx, firm, first, n-1)
	return lb, err
}

// MaxLogCheckpoints bounds the checkpoints one GET /v1/evidence/log answer
// carries to link a held checkpoint to its last (one is about 1 KB).
const MaxLogCheckpoints = 2000

// firstCovering is the first of firm's checkpoints 1..n that covers at
// least size entries (n covers them), found by bisecting: checkpoints
// cover more entries as their numbers grow.
func (e *Evidence) firstCovering(ctx context.Context, firm string, size, n int64) (int64, error) {
	lo, hi := int64(1), n
	for lo < hi {
		mid := (lo + hi) / 2
		s, err := e.Store.Checkpoint(ctx, firm, mid)
		if err != nil {
			return 0, err
		}
		var c evidence.Checkpoint
		if err := contracts.DecodeStrict([]byte(s.Body), &c); err != nil {
			return 0, failure.Wrap(failure.KindLedgerCorrupt, "", err)
		}
		if c.Size >= size {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}
