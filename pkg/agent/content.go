package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// A run's privileged values outside its ledger (issue 26): a warrant's
// input and summary, counsel's edit and note, and a claim's result. In a
// run with a data key each is stored only sealed under it, like the
// ledger's members, and bound by its field name to its item and member, so
// a value moved to another warrant, claim or member does not open. The
// store keeps what it is given; the brain seals before it writes, and every
// reader opens after it reads (OpenWarrant, openResult), checking that an
// input still hashes to the hash counsel signs.

func warrantField(approvalID, member string) string {
	return "warrant/" + approvalID + "/" + member
}

func claimField(k warrant.EffectKey) string {
	return "claim/" + k.ToolName + "/" + k.InputSHA256 + "/" + strconv.Itoa(max(k.Attempt, 1)) + "/result"
}

// OpenContent is the data key of run for a reader of its content (one
// kms:Decrypt): nil for a run whose content is in the clear. A run whose
// content was destroyed is warrant.ErrContentDestroyed (conflict: a reader
// shows it as destroyed); a run whose key does not open (the firm's key
// disabled or deleted) is config_invalid wrapping seal.ErrKeyUnavailable.
func OpenContent(ctx context.Context, ring seal.Keyring, run warrant.Run) (*seal.RunKey, error) {
	return newRunKey(ring).get(ctx, run)
}

func sealJSON(k *seal.RunKey, field string, raw json.RawMessage) (json.RawMessage, error) {
	if k == nil || len(raw) == 0 {
		return raw, nil
	}
	return k.SealJSON(field, raw)
}

func openJSON(k *seal.RunKey, field string, stored json.RawMessage) (json.RawMessage, error) {
	switch {
	case len(stored) == 0:
		return stored, nil
	case k == nil && seal.IsSealed(stored):
		return nil, failure.Wrap(failure.KindLedgerCorrupt, "a sealed value in a run without a data key", seal.ErrCannotOpen)
	case k == nil:
		return stored, nil
	}
	return k.OpenJSON(field, stored)
}

func sealString(k *seal.RunKey, field, s string) (string, error) {
	if k == nil || s == "" {
		return s, nil
	}
	raw, _ := json.Marshal(s) // a string always marshals
	out, err := k.SealJSON(field, raw)
	return string(out), err
}

func openString(k *seal.RunKey, field, stored string) (string, error) {
	raw, err := openJSON(k, field, json.RawMessage(stored))
	if err != nil || k == nil || len(raw) == 0 {
		return string(raw), err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("agent: open %s: %w", field, seal.ErrCannotOpen)
	}
	return s, nil
}

// sealWarrant seals a new warrant's input and summary (k nil: as it is).
func sealWarrant(k *seal.RunKey, w warrant.Warrant) (warrant.Warrant, error) {
	var err error
	if w.Input, err = sealJSON(k, warrantField(w.ApprovalID, "input"), w.Input); err != nil {
		return w, err
	}
	w.HumanSummary, err = sealString(k, warrantField(w.ApprovalID, "human_summary"), w.HumanSummary)
	return w, err
}

// sealDecision seals counsel's edit and note for the warrant approvalID.
func sealDecision(k *seal.RunKey, approvalID string, d warrant.CounselDecision) (warrant.CounselDecision, error) {
	var err error
	if d.EditedInput, err = sealJSON(k, warrantField(approvalID, "edited_input"), d.EditedInput); err != nil {
		return d, err
	}
	d.Note, err = sealString(k, warrantField(approvalID, "note"), d.Note)
	return d, err
}

// OpenWarrant opens a stored warrant's content with its run's key (k nil: a
// run in the clear, returned as it is) and holds the opened input to the
// hash counsel signs, and counsel's edit to its own: what counsel is shown
// and what runs are the bytes the hashes name. A value that does not open,
// or opens to other bytes than its hash, is ledger_corrupt.
func OpenWarrant(k *seal.RunKey, w warrant.Warrant) (warrant.Warrant, error) {
	var err error
	if w.Input, err = openJSON(k, warrantField(w.ApprovalID, "input"), w.Input); err != nil {
		return w, corrupt("the warrant's input", err)
	}
	if w.HumanSummary, err = openString(k, warrantField(w.ApprovalID, "human_summary"), w.HumanSummary); err != nil {
		return w, corrupt("the warrant's summary", err)
	}
	if w.EditedInput, err = openJSON(k, warrantField(w.ApprovalID, "edited_input"), w.EditedInput); err != nil {
		return w, corrupt("counsel's edit", err)
	}
	if w.Note, err = openString(k, warrantField(w.ApprovalID, "note"), w.Note); err != nil {
		return w, corrupt("counsel's note", err)
	}
	if k != nil {
		if h, err := contracts.InputHash(w.Input); err != nil || h != w.ToolInputHash {
			return w, failure.New(failure.KindLedgerCorrupt, "the warrant's input does not hash to its tool_input_hash")
		}
		if w.EditedHash != "" && len(w.EditedInput) > 0 {
			if h, err := contracts.InputHash(w.EditedInput); err != nil || h != w.EditedHash {
				return w, failure.New(failure.KindLedgerCorrupt, "counsel's edit does not hash to its edited_hash")
			}
		}
	}
	return w, nil
}

// sealResult and openResult seal and open a claim's stored result.
func sealResult(k *seal.RunKey, key warrant.EffectKey, result json.RawMessage) (json.RawMessage, error) {
	return sealJSON(k, claimField(key), result)
}

func openResult(k *seal.RunKey, c *warrant.Claim) (json.RawMessage, error) {
	raw, err := openJSON(k, claimField(c.Key()), c.Result)
	if err != nil {
		return nil, corrupt("the effect's recorded result", err)
	}
	return raw, nil
}

func corrupt(what string, err error) error {
	if failure.Settled(err) {
		return err
	}
	return failure.Wrap(failure.KindLedgerCorrupt, what+" does not open under its run's key", err)
}
