package dynamo

import (
	"context"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// HeadSigner signs a run's ledger head (pkg/anchor's Keyring is one).
type HeadSigner interface {
	SignHead(ctx context.Context, firm, run string, seq int64, hash string) (mac, keyID string, err error)
}

// WithHeadSigner makes the store sign the head it moves with every append.
// Without one the head is kept unsigned (its MAC empty), which a reader that
// verifies heads refuses.
func WithHeadSigner(h HeadSigner) Option { return func(s *Store) { s.signer = h } }

// head is where a write moves a run's ledger head: from prev (the seq
// before the write's first line) to its last line, signed.
type head struct {
	prev, seq        int64
	hash, mac, keyID string
	// fence is the writing worker's lease (warrant.FenceFromContext), nil
	// for a writer that holds none.
	fence *warrant.Fence
}

// headOf signs the head after lines (the lines of one write, consecutive).
func (s *Store) headOf(ctx context.Context, firm, run string, lines []contracts.Line) (head, error) {
	last := lines[len(lines)-1]
	h := head{prev: lines[0].Seq - 1, seq: last.Seq, hash: last.Hash}
	if f, ok := warrant.FenceFromContext(ctx); ok {
		h.fence = &f
	}
	if s.signer != nil {
		var err error
		if h.mac, h.keyID, err = s.signer.SignHead(ctx, firm, run, h.seq, h.hash); err != nil {
			return head{}, err
		}
	}
	return h, nil
}

// set moves the run item's head in an update.
func (h head) set(u *update) *update {
	return u.set("head_seq", num(h.seq)).set("head_hash", str(h.hash)).setStr("head_mac", h.mac).setStr("head_key", h.keyID)
}

// cond is the condition that the stored head is still h.prev: the head moves
// only from the line this write extends, so it is always the ledger's last
// line, never one a racing or replayed writer overtook. A worker's write is
// fenced too: the run is running under exactly the worker's lease (owner
// and epoch), so a worker whose lease was taken over writes nothing.
func (h head) cond() (string, map[string]types.AttributeValue) {
	c, v := "#head_seq = :head_prev", map[string]types.AttributeValue{":head_prev": num(h.prev)}
	if h.fence != nil {
		fc, fv := fenceCond(*h.fence)
		c += " AND " + fc
		maps.Copy(v, fv)
	}
	return c, v
}

// fenceCond is the run item condition of a worker's write under fence f.
func fenceCond(f warrant.Fence) (string, map[string]types.AttributeValue) {
	return "#status = :fence_running AND #lease_owner = :fence_owner AND #lease_epoch = :fence_epoch",
		map[string]types.AttributeValue{":fence_running": str(string(warrant.RunRunning)), ":fence_owner": str(f.Owner), ":fence_epoch": num(f.Epoch)}
}

// fenced reports whether the run item it still runs under the fence ctx
// carries (true when ctx carries none).
func fenced(ctx context.Context, it runItem) bool {
	f, ok := warrant.FenceFromContext(ctx)
	return !ok || (it.Status == string(warrant.RunRunning) && it.LeaseOwner == f.Owner && it.LeaseEpoch == f.Epoch)
}

// headUpdate is the run item update of a write that only appends lines.
func (s *Store) headUpdate(pk string, h head) *types.Update {
	c, v := h.cond()
	return s.txUpdate(key(pk, skRun), h.set(newUpdate()), c, v)
}

// runRefused says why a run item's condition failed in a write of lines
// starting at firstSeq: missing (ErrNotFound), not in the state the write
// needs (inState false: ErrRunNotInState), or its head moved on (another
// writer holds firstSeq: ErrSeqTaken).
func (s *Store) runRefused(ctx context.Context, old map[string]types.AttributeValue, pk, run string, inState func(runItem) bool, firstSeq int64, cause error) error {
	old, err := s.oldImage(ctx, old, pk, skRun)
	if err != nil {
		return wrap("read run", err)
	}
	if old == nil {
		return fail(warrant.ErrNotFound, cause, "run %s", run)
	}
	it, _ := unmarshal[runItem](old)
	if !fenced(ctx, it) {
		f, _ := warrant.FenceFromContext(ctx)
		return fail(warrant.ErrLeaseHeld, cause, "run %s is %s, leased by %s (epoch %d), not by %s (epoch %d)",
			run, it.Status, it.LeaseOwner, it.LeaseEpoch, f.Owner, f.Epoch)
	}
	if inState != nil && !inState(it) {
		return fail(warrant.ErrRunNotInState, cause, "run %s is %s (held on %q)", run, it.Status, it.HeldOn)
	}
	return &SeqTakenError{Seq: firstSeq, Err: cause}
}
