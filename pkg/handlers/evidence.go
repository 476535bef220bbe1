package handlers

import (
	"context"
	"errors"
	"fmt"
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
	PutCheckpoint(ctx context.Context, firm string, h evidence.LogHead, cp evidence.Checkpoint, signed evidence.Signed) error
	DueLogs(ctx context.Context, limit int) ([]string, error)
}

// CheckpointSink keeps each checkpoint where nobody with table access can
// rewrite it (an S3 bucket with Object Lock; pkg/anchor's S3Sink).
type CheckpointSink interface {
	PutCheckpoint(ctx context.Context, firm string, number int64, signed evidence.Signed) error
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
	Sink   CheckpointSink
	Now    func() time.Time
	Logger *failure.Logger
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
// made is false when there was nothing new or another writer got there
// first (the next pass tries again).
func (e *Evidence) Checkpoint(ctx context.Context, firm string) (n int64, made bool, err error) {
	h, err := e.Store.LogHead(ctx, firm)
	if err != nil || h.Size == h.CheckpointSize {
		return h.Checkpoint, false, err
	}
	cp := evidence.Checkpoint{FirmID: firm, Number: h.Checkpoint + 1, Size: h.Size, Head: h.Head, Prev: h.CheckpointSHA,
		CreatedAt: contracts.FormatTime(e.now())}
	signed, err := evidence.SignCheckpoint(ctx, e.Signer, cp)
	if err != nil {
		return h.Checkpoint, false, signingFailed(err)
	}
	// Outside the table first: a checkpoint the table holds is always in
	// the bucket too. A losing race leaves an extra version of the same
	// key behind, which the chain (each checkpoint names its previous one's
	// hash) tells apart.
	if e.Sink != nil {
		if err := e.Sink.PutCheckpoint(ctx, firm, cp.Number, signed); err != nil {
			return h.Checkpoint, false, err
		}
	}
	if err := e.Store.PutCheckpoint(ctx, firm, h, cp, signed); err != nil {
		if errors.Is(err, warrant.ErrLogMoved) {
			return h.Checkpoint, false, nil
		}
		return h.Checkpoint, false, err
	}
	return cp.Number, true, nil
}

// CheckpointDue checkpoints every firm log with entries no checkpoint
// covers (at most limit firms), and answers how many it made and how many
// failed (each failure logged, no content).
func (e *Evidence) CheckpointDue(ctx context.Context, limit int) (made, failed int, err error) {
	firms, err := e.Store.DueLogs(ctx, limit)
	if err != nil {
		return 0, 0, err
	}
	for _, firm := range firms {
		_, ok, err := e.Checkpoint(ctx, firm)
		switch {
		case err != nil:
			failed++
			e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "checkpoint", failure.Identity{FirmID: firm}))
		case ok:
			made++
		}
	}
	return made, failed, nil
}

// Bundle assembles a run's evidence as the table holds it, judging nothing
// (the verifier does): the ledger's lines and signed head, the receipts a
// checkpoint covers, the firm log from an entry appended evidence.Skew
// before the run started to that checkpoint, and the checkpoint. at picks
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
	b.Checkpoint = &signed
	first, err := contracts.ParseLineHeader(items[0].Raw)
	if err != nil {
		return b, failure.Wrap(failure.KindLedgerCorrupt, "", err)
	}
	started, _ := time.Parse(contracts.TimeLayout, first.CreatedAt)
	from, err := e.Store.LogIndexBefore(ctx, firm, started.Add(-evidence.Skew), cp.Size)
	if err != nil {
		return b, err
	}
	if b.Log, err = e.Store.LogSegment(ctx, firm, max(from, 1), cp.Size); err != nil {
		return b, err
	}
	stored, err := e.Store.Receipts(ctx, firm, run)
	if err != nil {
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
	lb.Log, err = e.Store.LogSegment(ctx, firm, from, cp.Size)
	return lb, err
}
