package dynamo_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"

	"github.com/seed-f6d3920e/warrant"
)

// testCheckpointTimestamps (issue 30 item 3): with WithAttestations a
// checkpoint that covers the whole log leaves its head due until its token
// is stored; the token is stored once, on an existing checkpoint only, and
// served with it; a head that grew since stays due. Without the option a
// checkpoint settles its head as before.
func testCheckpointTimestamps(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	stamped := dynamo.New(ep.Client, e.table, dynamo.WithClock(e.clock.Now), dynamo.WithAttestations())
	due := func(firm string) bool {
		t.Helper()
		firms, err := e.store.DueLogs(e.ctx, 0)
		must(t, err)
		return slices.Contains(firms, firm)
	}
	checkpoint := func(s *dynamo.Store, firm string) {
		t.Helper()
		_, _, err := s.AppendReceipt(e.ctx, firm, id(), 1, evidence.KindStart, evidence.Signed{Body: `{"n":1}`, Signature: "AA=="})
		must(t, err)
		h, err := s.LogHead(e.ctx, firm)
		must(t, err)
		cp := evidence.Checkpoint{FirmID: firm, Number: h.Checkpoint + 1, Size: h.Size, Head: h.Head}
		must(t, s.PutCheckpoint(e.ctx, firm, h, cp, evidence.Signed{Body: `{"cp":1}`, Signature: "AA=="}))
	}

	plain := id()
	checkpoint(e.store, plain)
	if due(plain) {
		t.Error("without WithAttestations a checkpoint of the whole log left it due")
	}

	firm := id()
	checkpoint(stamped, firm)
	if !due(firm) {
		t.Fatal("a checkpoint awaiting its timestamp is not due")
	}
	if err := stamped.PutCheckpointTimestamp(e.ctx, firm, 2, "dG9rZW4="); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("a token for no checkpoint: %v, want ErrNotFound", err)
	}
	must(t, stamped.PutCheckpointTimestamp(e.ctx, firm, 1, "dG9rZW4="))
	if !due(firm) {
		t.Error("a token settled the log: the sweeper settles it once every attestation is kept")
	}
	if err := stamped.AddCheckpointCosignatures(e.ctx, firm, 2, []string{"— w AAAA"}); !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("cosignatures for no checkpoint: %v, want ErrNotFound", err)
	}
	must(t, stamped.AddCheckpointCosignatures(e.ctx, firm, 1, []string{"— w1 AAAA"}))
	must(t, stamped.AddCheckpointCosignatures(e.ctx, firm, 1, []string{"— w2 BBBB", "— w3 CCCC"}))
	must(t, stamped.CheckpointSettled(e.ctx, firm, 1))
	if due(firm) {
		t.Error("the settled log is still due")
	}
	if err := stamped.PutCheckpointTimestamp(e.ctx, firm, 1, "b3RoZXI="); !errors.Is(err, evidence.ErrTimestampExists) {
		t.Errorf("a second token: %v, want ErrTimestampExists", err)
	}
	got, err := stamped.Checkpoint(e.ctx, firm, 1)
	must(t, err)
	if got.Timestamp != "dG9rZW4=" || got.Body != `{"cp":1}` || !slices.Equal(got.Cosignatures, []string{"— w1 AAAA", "— w2 BBBB", "— w3 CCCC"}) {
		t.Errorf("checkpoint 1 reads back %+v, want the first token", got)
	}

	// A log that grew since its checkpoint stays due when it is settled.
	_, _, err = stamped.AppendReceipt(e.ctx, firm, id(), 1, evidence.KindStart, evidence.Signed{Body: `{"n":2}`, Signature: "AA=="})
	must(t, err)
	must(t, stamped.CheckpointSettled(e.ctx, firm, 1))
	if !due(firm) {
		t.Error("a log with entries no checkpoint covers was settled")
	}
}
