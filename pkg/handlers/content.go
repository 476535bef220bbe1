package handlers

import (
	"context"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// content opens runs' data keys for one request (issue 26): each run's at
// most once (one kms:Decrypt per run the answer shows), kept in memory for
// the request only (close).
type content struct {
	ring seal.Keyring
	keys map[string]*seal.RunKey // by firm/run
}

func newContent(ring seal.Keyring) *content {
	return &content{ring: ring, keys: map[string]*seal.RunKey{}}
}

// key is run's data key: nil for a run whose content is in the clear, or
// was destroyed (a reader then shows the run without it: its lines stay
// sealed, its state says content_destroyed).
func (c *content) key(ctx context.Context, run warrant.Run) (*seal.RunKey, error) {
	if len(run.DataKey) == 0 {
		return nil, nil
	}
	id := run.FirmID + "/" + run.RunID
	if k, ok := c.keys[id]; ok {
		return k, nil
	}
	k, err := agent.OpenContent(ctx, c.ring, run)
	if err != nil {
		return nil, err
	}
	c.keys[id] = k
	return k, nil
}

// opener is reducer.FoldOptions.Open over key (asked only when a line is
// sealed: a run without a data key cannot have one, unless its content was
// destroyed, when nothing opens and the lines are read sealed).
func (c *content) opener(ctx context.Context, run warrant.Run) (contracts.Opener, error) {
	k, err := c.key(ctx, run)
	switch {
	case err != nil:
		return nil, err
	case k == nil && !run.ContentDestroyedAt.IsZero():
		return nil, nil
	case k == nil:
		return nil, failure.New(failure.KindLedgerCorrupt, "the run's ledger is sealed and its run item holds no data key")
	}
	return k, nil
}

func (c *content) close() {
	for id, k := range c.keys {
		if k != nil {
			k.Destroy()
		}
		delete(c.keys, id)
	}
}

// openedLine is a stored line for a reader: a sealed one opened
// (contracts.OpenedJSON), any other as it is stored.
func (c *content) openedLine(ctx context.Context, run warrant.Run, raw []byte) ([]byte, error) {
	l, err := contracts.ParseEventLine(raw)
	if err != nil {
		return nil, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not parse", err)
	}
	if !l.Sealed {
		return raw, nil
	}
	o, err := c.opener(ctx, run)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return raw, nil // destroyed: shown as stored
	}
	if l, err = contracts.OpenLine(l, o); err != nil {
		return nil, failure.Wrap(failure.KindLedgerCorrupt, "the run's content does not open under its key", err)
	}
	return contracts.OpenedJSON(l)
}

// runGetter reads a run item.
type runGetter interface {
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
}

// warrant opens a stored warrant's content (agent.OpenWarrant) with its
// run's key, the run item read once per run.
func (c *content) warrant(ctx context.Context, runs runGetter, w warrant.Warrant) (warrant.Warrant, error) {
	id := w.FirmID + "/" + w.RunID
	k, ok := c.keys[id]
	if !ok {
		run, err := runs.GetRun(ctx, w.FirmID, w.RunID)
		if err != nil {
			return w, err
		}
		if k, err = c.key(ctx, run); err != nil {
			return w, err
		}
		c.keys[id] = k
	}
	return agent.OpenWarrant(k, w)
}
