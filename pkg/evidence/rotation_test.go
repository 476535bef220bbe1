package evidence_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// TestVerifyRefusesTheRetiredKeySigningAsTheCurrent: after a rotation the
// verifier trusts the retired key (old receipts stay verifiable) and the
// current one. A signature is checked under the key its document names: a
// receipt or a checkpoint that names the current key's id but is signed by
// the retired key is refused, though the retired key is trusted. A bundle
// signed by the retired key throughout, naming it, still verifies.
//
// Checked: with KeySet.verify accepting a signature by any trusted key
// (trying every key of the set rather than the one the id names), "a
// receipt" and "a checkpoint" fail (Verify answers nil); with it back they
// pass. Issue 31 item 10.
func TestVerifyRefusesTheRetiredKeySigningAsTheCurrent(t *testing.T) {
	ctx := context.Background()
	retired, retiredPub := newKey(t)
	current, currentPub := newKey(t)
	keys := evidence.KeySet{}.Add(retiredPub, currentPub)
	lines := filingLedger(t, true)
	good := completedBundle(t, current, lines, derive(t, lines))
	if _, err := evidence.Verify(good, keys); err != nil {
		t.Fatalf("the current key's bundle: %v", err)
	}
	if rep, err := evidence.Verify(completedBundle(t, retired, lines, derive(t, lines)), keys); err != nil || !rep.Complete {
		t.Fatalf("the retired key's bundle, naming it: %v %+v", err, rep)
	}
	// resign signs body as it stands (naming the current key) with the
	// retired key: the same bytes, so the log still records it.
	resign := func(s evidence.Signed, v any) evidence.Signed {
		if err := json.Unmarshal([]byte(s.Body), v); err != nil {
			t.Fatal(err)
		}
		out, err := evidence.Sign(ctx, retired, v)
		if err != nil {
			t.Fatal(err)
		}
		if out.Body != s.Body {
			t.Fatalf("re-signing changed the body:\n%s\n%s", out.Body, s.Body)
		}
		return out
	}
	want := "the signature does not verify under key " + current.KeyID()
	t.Run("a receipt", func(t *testing.T) {
		b := cloneBundle(t, good)
		b.Receipts[1] = resign(b.Receipts[1], &evidence.Receipt{})
		if _, err := evidence.Verify(b, keys); err == nil || !strings.Contains(err.Error(), "receipt 2: "+want) {
			t.Fatalf("Verify: %v\nwant an error containing %q", err, want)
		}
	})
	t.Run("a checkpoint", func(t *testing.T) {
		b := cloneBundle(t, good)
		cp := resign(*b.Checkpoint, &evidence.Checkpoint{})
		b.Checkpoint = &cp
		if _, err := evidence.Verify(b, keys); err == nil || !strings.Contains(err.Error(), "checkpoint: "+want) {
			t.Fatalf("Verify: %v\nwant an error containing %q", err, want)
		}
	})
}
