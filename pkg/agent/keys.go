package agent

import (
	"context"
	"errors"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// runKey is one run's data key for one invocation (issue 26): opened from
// the run item's wrapped key at most once (one kms:Decrypt), kept in memory
// only, and dropped when the invocation ends (close). A run without a
// wrapped key (from before sealing, or a deployment without DATA_KEY) has
// its content in the clear, and so do the lines written for it. A run
// whose content was destroyed has no key either, and is no such run: its
// key is warrant.ErrContentDestroyed, so nothing opens it and nothing is
// written for it in the clear.
type runKey struct {
	ring seal.Keyring
	key  *seal.RunKey
}

func newRunKey(ring seal.Keyring) *runKey { return &runKey{ring: ring} }

// open is reducer.FoldOptions.Open: the run's key, opened once. The fold
// asks only when a line is sealed.
func (k *runKey) open(ctx context.Context, r warrant.Run) (contracts.Opener, error) {
	key, err := k.get(ctx, r)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, failure.New(failure.KindLedgerCorrupt, "the run's ledger is sealed and its run item holds no data key")
	}
	return key, nil
}

// sealer is what the lines an invocation appends are sealed with: the
// run's key, or nil for a run whose content is in the clear.
func (k *runKey) sealer(ctx context.Context, r warrant.Run) (contracts.Sealer, error) {
	key, err := k.get(ctx, r)
	if key == nil || err != nil {
		return nil, err
	}
	return key, nil
}

func (k *runKey) get(ctx context.Context, r warrant.Run) (*seal.RunKey, error) {
	if !r.ContentDestroyedAt.IsZero() {
		return nil, warrant.ErrContentDestroyed
	}
	if len(r.DataKey) == 0 {
		return nil, nil
	}
	if k.key != nil {
		return k.key, nil
	}
	if k.ring == nil {
		return nil, failure.New(failure.KindConfigInvalid, "the run's content is sealed and this function has no DATA_KEY")
	}
	key, err := k.ring.OpenRunKey(ctx, r.FirmID, r.RunID, r.DataKey)
	switch {
	case errors.Is(err, seal.ErrKeyUnavailable):
		return nil, failure.Wrap(failure.KindConfigInvalid, "the run's data key is unavailable: the firm's key is disabled or the run's content was destroyed", err)
	case err != nil:
		return nil, err
	}
	k.key = key
	return key, nil
}

// close drops the key from memory.
func (k *runKey) close() {
	if k.key != nil {
		k.key.Destroy()
		k.key = nil
	}
}
