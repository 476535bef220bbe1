package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// Stamper obtains an RFC 3161 timestamp token (DER) over the SHA-256 of
// doc from the time-stamping authority the firm configured
// (pkg/timestamp's Client, which checks the token before answering it).
// Any error means no token now: the next sweep asks again.
type Stamper interface {
	Stamp(ctx context.Context, doc []byte) ([]byte, error)
}

// Witness is a witness the sweeper submits each firm's latest checkpoint
// to (WITNESSES): URL its submission prefix, Key its cosignature key.
type Witness struct {
	URL string
	Key evidence.WitnessKey
}

// attesters is what is left to ask this sweep: the TSA and each witness,
// until one fails (a TSA or witness that hangs costs one request's timeout
// a sweep, not one per firm).
type attesters struct {
	tsa       bool
	witnesses []bool
	// What this sweep obtained, and the attempts that failed.
	timestamps, cosignatures, failed int
}

func (e *Evidence) attesters() *attesters {
	a := &attesters{tsa: e.TSA != nil, witnesses: make([]bool, len(e.Witnesses))}
	for i := range a.witnesses {
		a.witnesses[i] = true
	}
	return a
}

// any: something is configured and still reachable this sweep.
func (a *attesters) any() bool { return a.tsa || slices.Contains(a.witnesses, true) }

// attest gets firm's latest checkpoint what vouches for it beyond the
// firm's own key: a timestamp token from the TSA (Evidence.TSA) and a
// cosignature from each witness (Evidence.Witnesses). The sweep calls it
// for each firm it visits, after Checkpoint. Only the latest checkpoint
// needs them: through the chain it commits to every one before it, and a
// witness that cosigns it has checked the log from the last one it
// cosigned. A failure is logged (no content) and left to the next sweep,
// which visits the log again until its latest checkpoint holds them all
// (dynamo.WithAttestations; CheckpointSettled once it does): it never fails
// the sweep or the checkpoint. An attester that failed is asked nothing
// more this sweep (a).
func (e *Evidence) attest(ctx context.Context, firm string, a *attesters) {
	h, err := e.Store.LogHead(ctx, firm)
	if err == nil && h.Checkpoint == 0 {
		return
	}
	var signed evidence.Signed
	if err == nil {
		signed, err = e.Store.Checkpoint(ctx, firm, h.Checkpoint)
	}
	if err != nil {
		e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "attest", failure.Identity{FirmID: firm}))
		return
	}
	pending := false // an attestation is still missing
	if e.TSA != nil && signed.Timestamp == "" {
		pending = true
		if a.tsa {
			if err := e.timestamp(ctx, firm, h.Checkpoint, signed); err != nil {
				e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "timestamp", failure.Identity{FirmID: firm}))
				a.tsa = !errors.Is(err, errNoToken)
				a.failed++
			} else {
				pending = false
				a.timestamps++
			}
		}
	}
	for i, w := range e.Witnesses {
		if signed.Note == "" || evidence.VerifyCosignature(signed.Note, signed.Cosignatures, w.Key) == nil {
			continue // cosigned (or a checkpoint from before notes, which no witness can read)
		}
		if !a.witnesses[i] {
			pending = true
			continue
		}
		if err := e.cosign(ctx, firm, h.Checkpoint, signed, w); err != nil {
			e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "witness", failure.Identity{FirmID: firm}))
			pending, a.witnesses[i] = true, !errors.Is(err, errUnreachable)
			a.failed++
		} else {
			a.cosignatures++
		}
	}
	if !pending {
		if err := e.Store.CheckpointSettled(ctx, firm, h.Checkpoint); err != nil {
			e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "attest", failure.Identity{FirmID: firm}))
		}
	}
}

// errNoToken marks the TSA's failure to give a token (unreachable, slow,
// refusing, or answering one that does not verify).
var errNoToken = errors.New("no timestamp token")

// WitnessProofEntries bounds the entries one submission to a witness
// carries (a variable so tests can lower it): within witness.MaxBodyBytes,
// an entry line being about 200 bytes, 280 in base64.
var WitnessProofEntries int64 = 15000

// errUnreachable marks a witness that gave no answer (or a 5xx).
var errUnreachable = errors.New("the witness did not answer")

// timestamp obtains and keeps the token of firm's checkpoint n (signed):
// outside the table first (the sink: written once, as the checkpoint), then
// on the table's checkpoint item, whence bundles and the log serve it.
func (e *Evidence) timestamp(ctx context.Context, firm string, n int64, signed evidence.Signed) error {
	token, err := e.TSA.Stamp(ctx, []byte(signed.Body))
	if err != nil {
		return failure.Wrap(failure.KindTimeout, "the time-stamping authority gave no timestamp; the next sweep asks again",
			fmt.Errorf("%w: %w", errNoToken, err))
	}
	// A token kept outside the table by a pass that stopped before the
	// table's write stands there; the table takes this one (both are over
	// the same body).
	if err := e.Sink.PutTimestamp(ctx, firm, n, token); err != nil && !errors.Is(err, evidence.ErrTimestampExists) {
		return err
	}
	err = e.Store.PutCheckpointTimestamp(ctx, firm, n, base64.StdEncoding.EncodeToString(token))
	if errors.Is(err, evidence.ErrTimestampExists) {
		return nil // another sweeper got there first
	}
	return err
}

// cosign submits firm's checkpoint n (signed) to witness w, from the size
// of checkpoint n-1 (the last the witness cosigned when it answered every
// sweep; a witness that missed some answers 409 with its own size, and
// witness.Cosign sends the entries from there), and keeps its cosignature
// on the checkpoint. A witness too far behind for one submission
// (WitnessProofEntries) is brought up through the checkpoints between: the
// last one within its reach first, each cosignature kept on its
// checkpoint. A witness's refusal to extend what it holds (422, or it holds
// more entries than the checkpoint) is the firm log diverging from what an
// outsider saw: failure.KindLogDiverged, an alarm.
func (e *Evidence) cosign(ctx context.Context, firm string, n int64, signed evidence.Signed, w Witness) error {
	cp, err := decodeCheckpoint(signed)
	if err != nil {
		return err
	}
	var old int64
	if n > 1 {
		if old, err = e.checkpointSize(ctx, firm, n-1); err != nil {
			return err
		}
	}
	entries := func(ctx context.Context, from, to int64) ([]string, error) {
		if to-from > WitnessProofEntries {
			return nil, &tooFar{from: from}
		}
		seg, err := e.Store.LogSegment(ctx, firm, from+1, to)
		return seg.Entries, err
	}
	hc := e.WitnessClient
	if hc == nil {
		hc = http.DefaultClient
	}
	target, note := cp, signed.Note
	for range 8 { // each step covers WitnessProofEntries: a bound, not an expectation
		lines, held, err := witness.Cosign(ctx, hc, w.URL, w.Key, []byte(note), target.Size, old, entries)
		var rf *witness.Refused
		var far *tooFar
		switch {
		case errors.As(err, &far):
			// The last checkpoint within the witness's reach, first.
			k, err := e.lastWithin(ctx, firm, far.from, far.from+WitnessProofEntries, target.Number)
			if err != nil {
				return err
			}
			if k == 0 {
				return failure.New(failure.KindConfigInvalid, fmt.Sprintf("witness %s holds %d entries; no checkpoint lies within %d entries after it", w.Key.Name, far.from, WitnessProofEntries))
			}
			s, err := e.Store.Checkpoint(ctx, firm, k)
			if err != nil {
				return err
			}
			if target, err = decodeCheckpoint(s); err != nil {
				return err
			}
			note, old = s.Note, far.from
			continue
		case err == nil:
		case held > target.Size || errors.As(err, &rf) && rf.Status == http.StatusUnprocessableEntity:
			return failure.New(failure.KindLogDiverged, fmt.Sprintf("witness %s refused checkpoint %d of %d entries: %v", w.Key.Name, target.Number, target.Size, err))
		case errors.As(err, &rf) && rf.Status < 500:
			return failure.New(failure.KindConfigInvalid, fmt.Sprintf("witness %s refused checkpoint %d: %v (is the firm's log, with its note key, configured there?)", w.Key.Name, target.Number, err))
		default:
			return failure.Wrap(failure.KindTimeout, fmt.Sprintf("witness %s gave no cosignature; the next sweep asks again", w.Key.Name),
				fmt.Errorf("%w: %w", errUnreachable, err))
		}
		if err := e.Store.AddCheckpointCosignatures(ctx, firm, target.Number, lines); err != nil || target.Number == n {
			return err
		}
		// A checkpoint between, cosigned: now the latest, from it.
		target, note, old = cp, signed.Note, target.Size
	}
	return failure.Wrap(failure.KindTimeout, fmt.Sprintf("witness %s is still catching up; the next sweep goes on", w.Key.Name), errUnreachable)
}

// tooFar: a witness holds a size too far behind for one submission.
type tooFar struct{ from int64 }

func (t *tooFar) Error() string {
	return fmt.Sprintf("the witness holds %d entries: more than %d since", t.from, WitnessProofEntries)
}

func decodeCheckpoint(s evidence.Signed) (evidence.Checkpoint, error) {
	var c evidence.Checkpoint
	if err := contracts.DecodeStrict([]byte(s.Body), &c); err != nil {
		return c, failure.Wrap(failure.KindLedgerCorrupt, "", err)
	}
	return c, nil
}

// checkpointSize is the number of entries firm's checkpoint n covers.
func (e *Evidence) checkpointSize(ctx context.Context, firm string, n int64) (int64, error) {
	s, err := e.Store.Checkpoint(ctx, firm, n)
	if err != nil {
		return 0, err
	}
	c, err := decodeCheckpoint(s)
	return c.Size, err
}

// lastWithin is the last of firm's checkpoints before before whose size
// lies in (from, to] (0: none), found by bisecting: checkpoints cover more
// entries as their numbers grow.
func (e *Evidence) lastWithin(ctx context.Context, firm string, from, to, before int64) (int64, error) {
	lo, hi := int64(0), before-1 // checkpoint lo covers at most to (0: none); those past hi cover more
	for lo < hi {
		mid := (lo + hi + 1) / 2
		size, err := e.checkpointSize(ctx, firm, mid)
		if err != nil {
			return 0, err
		}
		if size <= to {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return 0, nil
	}
	size, err := e.checkpointSize(ctx, firm, lo)
	if err != nil || size <= from {
		return 0, err
	}
	return lo, nil
}
