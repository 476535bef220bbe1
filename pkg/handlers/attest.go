package handlers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Stamper obtains an RFC 3161 timestamp token (DER) over the SHA-256 of
// doc from the time-stamping authority the firm configured
// (pkg/timestamp's Client, which checks the token before answering it).
// Any error means no token now: the next sweep asks again.
type Stamper interface {
	Stamp(ctx context.Context, doc []byte) ([]byte, error)
}

// attest gets firm's latest checkpoint what vouches for it beyond the
// firm's own key: a timestamp token from the TSA (Evidence.TSA). The sweep
// calls it for each firm it visits, after Checkpoint. Only the latest
// checkpoint needs a token: through the chain it commits to every one
// before it. A failure is logged (no content) and left to the next sweep,
// which visits the log again while its latest checkpoint lacks a token
// (dynamo.WithTimestamps): it never fails the sweep or the checkpoint.
// reachable is false when the TSA gave no token: the sweep asks it nothing
// more this pass, so a TSA that hangs costs one request's timeout, not one
// per firm.
func (e *Evidence) attest(ctx context.Context, firm string) (reachable bool) {
	if e.TSA == nil {
		return false
	}
	err := e.timestamp(ctx, firm)
	if err != nil {
		e.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "timestamp", failure.Identity{FirmID: firm}))
	}
	return !errors.Is(err, errNoToken)
}

// errNoToken marks the TSA's failure to give a token (unreachable, slow,
// refusing, or answering one that does not verify).
var errNoToken = errors.New("no timestamp token")

// timestamp obtains and keeps the token of firm's latest checkpoint when it
// has none: outside the table first (the sink: written once, as the
// checkpoint), then on the table's checkpoint item, whence bundles and the
// log serve it.
func (e *Evidence) timestamp(ctx context.Context, firm string) error {
	h, err := e.Store.LogHead(ctx, firm)
	if err != nil || h.Checkpoint == 0 {
		return err
	}
	signed, err := e.Store.Checkpoint(ctx, firm, h.Checkpoint)
	if err != nil {
		return err
	}
	if signed.Timestamp != "" {
		// Stamped by an earlier pass that stopped before it settled the
		// head.
		return e.Store.CheckpointSettled(ctx, firm, h.Checkpoint)
	}
	token, err := e.TSA.Stamp(ctx, []byte(signed.Body))
	if err != nil {
		return failure.Wrap(failure.KindTimeout, "the time-stamping authority gave no timestamp; the next sweep asks again",
			fmt.Errorf("%w: %w", errNoToken, err))
	}
	// A token kept outside the table by a pass that stopped before the
	// table's write stands there; the table takes this one (both are over
	// the same body).
	if err := e.Sink.PutTimestamp(ctx, firm, h.Checkpoint, token); err != nil && !errors.Is(err, evidence.ErrTimestampExists) {
		return err
	}
	err = e.Store.PutCheckpointTimestamp(ctx, firm, h.Checkpoint, base64.StdEncoding.EncodeToString(token))
	if errors.Is(err, evidence.ErrTimestampExists) {
		return e.Store.CheckpointSettled(ctx, firm, h.Checkpoint) // another sweeper got there first
	}
	return err
}
