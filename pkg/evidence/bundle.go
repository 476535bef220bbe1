package evidence

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Skew is how far apart the clocks of the functions that write a run's lines
// and append its receipts may be. A run's bundle starts its log segment at an
// entry appended at least Skew before the run started (or at entry 1), so no
// entry of the run can lie before it.
const Skew = 5 * time.Minute

// Bundle is a run's evidence, self-contained: the ledger export's lines
// exactly, the ledger's signed head (an HMAC: for the firm's own checks), the
// run's receipts, the firm log from before the run started to a checkpoint,
// and that checkpoint. Verify checks it with nothing but public keys.
type Bundle struct {
	Schema   string              `json:"schema"`
	FirmID   string              `json:"firm_id"`
	RunID    string              `json:"run_id"`
	Ledger   []string            `json:"ledger"`
	Head     *contracts.HeadLine `json:"ledger_head,omitempty"`
	Receipts []Signed            `json:"receipts"`
	Log      Segment             `json:"log"`
	// Checkpoint is nil when no checkpoint covers the run's receipts yet.
	Checkpoint *Signed `json:"checkpoint"`
	// KeyIDs name the keys the receipts and the checkpoint are signed with
	// (GET /v1/keys publishes them).
	KeyIDs []string `json:"key_ids"`
}

// LogBundle is a stretch of a firm's log with the checkpoint it ends at: what
// an auditor keeps, and checks every run's bundle against (VerifyLog).
type LogBundle struct {
	Schema     string   `json:"schema"`
	FirmID     string   `json:"firm_id"`
	Log        Segment  `json:"log"`
	Checkpoint *Signed  `json:"checkpoint"`
	KeyIDs     []string `json:"key_ids"`
}

// Problem is a failed check: what was checked, and what is wrong.
type Problem struct {
	Check string
	Msg   string
}

func (p *Problem) Error() string { return p.Check + ": " + p.Msg }

func problem(check, format string, args ...any) error {
	return &Problem{Check: check, Msg: fmt.Sprintf(format, args...)}
}

// Report is what a verified bundle proves.
type Report struct {
	FirmID, RunID string
	// Checkpoint is the number of the checkpoint the receipts were found
	// under, LogSize the entries it covers.
	Checkpoint, LogSize int64
	Receipts            []Receipt
	// LastSeq is the ledger's last line; Covered the last line a receipt
	// covers; Status the run's state folded from the ledger.
	LastSeq, Covered int64
	Status           string
	// Complete: the run ended and every line is covered by a receipt.
	Complete bool
	// Pending says what is not yet under a checkpoint (the run's end).
	Pending string
}

// Verify checks a run's bundle offline against the keys the verifier trusts:
// the checkpoint's signature; the log segment's chain to the checkpoint's
// head; that the segment starts before the run did; each receipt's signature
// and key; that the log's entries for the run are exactly the bundle's
// receipts (a receipt dropped, altered or re-signed is found here); the
// ledger's lines, hashes and links; that every receipt covers the ledger line
// it names and says what the ledger says (a rollback leaves a receipt past
// the ledger's end); and that an ended run's ledger ends at its last receipt
// (lines past it are refused).
func Verify(b Bundle, keys KeySet) (Report, error) {
	rep := Report{FirmID: b.FirmID, RunID: b.RunID}
	if b.Schema != BundleSchema || b.FirmID == "" || b.RunID == "" {
		return rep, problem("bundle", "not a %s bundle naming a firm and a run", BundleSchema)
	}
	// The ledger.
	lines, st, err := parseLedger(b.FirmID, b.RunID, b.Ledger)
	if err != nil {
		return rep, err
	}
	rep.LastSeq, rep.Status = int64(len(lines)), string(st.Status)
	if h := b.Head; h != nil && (h.Seq != rep.LastSeq || h.Hash != lines[len(lines)-1].Hash || h.FirmID != b.FirmID || h.RunID != b.RunID) {
		return rep, problem("ledger", "the ledger ends at seq %d but its head says seq %d", rep.LastSeq, h.Seq)
	}
	derived, err := Derive(lines)
	if err != nil {
		return rep, problem("ledger", "%v", err)
	}
	// The checkpoint and the log.
	if b.Checkpoint == nil {
		return rep, problem("checkpoint", "no checkpoint covers this run yet: fetch the bundle again after the next checkpoint")
	}
	cp, err := OpenCheckpoint(keys, *b.Checkpoint)
	if err != nil {
		return rep, problem("checkpoint", "%v", err)
	}
	if cp.FirmID != b.FirmID {
		return rep, problem("checkpoint", "it is firm %s's, the bundle is firm %s's", cp.FirmID, b.FirmID)
	}
	rep.Checkpoint, rep.LogSize = cp.Number, cp.Size
	entries, err := b.Log.check(cp)
	if err != nil {
		return rep, problem("firm log", "%v", err)
	}
	started, _ := time.Parse(contracts.TimeLayout, lines[0].CreatedAt)
	if b.Log.From != 1 {
		if len(entries) == 0 {
			return rep, problem("firm log", "the segment is empty but does not start at entry 1")
		}
		at, err := time.Parse(contracts.TimeLayout, entries[0].At)
		if err != nil || at.After(started.Add(-Skew)) {
			return rep, problem("firm log", "the segment starts at entry %d, appended after the run started: entries of the run may lie before it", b.Log.From)
		}
	}
	// The receipts, against the log.
	byHash := map[string]Receipt{}
	for i, s := range b.Receipts {
		r, err := OpenReceipt(keys, s)
		if err != nil {
			return rep, problem("receipt", "receipt %d: %v", i+1, err)
		}
		if r.FirmID != b.FirmID || r.RunID != b.RunID {
			return rep, problem("receipt", "receipt %d is for another run", i+1)
		}
		byHash[s.SHA256()] = r
	}
	logged := map[string]bool{}
	var ofRun []Entry
	for _, e := range entries {
		if e.RunID != b.RunID {
			continue
		}
		r, ok := byHash[e.ReceiptSHA256]
		if !ok {
			return rep, problem("firm log", "log entry %d records a receipt for seq %d (%s) that the bundle does not carry: a receipt was dropped or altered", e.Index, e.Seq, e.Kind)
		}
		if r.Seq != e.Seq || r.Kind != e.Kind {
			return rep, problem("firm log", "log entry %d says seq %d (%s), its receipt says seq %d (%s)", e.Index, e.Seq, e.Kind, r.Seq, r.Kind)
		}
		logged[e.ReceiptSHA256] = true
		ofRun = append(ofRun, e)
	}
	for h, r := range byHash {
		if !logged[h] {
			return rep, problem("receipt", "the receipt for seq %d (%s) is not in the firm log as of checkpoint %d", r.Seq, r.Kind, cp.Number)
		}
	}
	// The receipts, against the ledger.
	want := map[int64]Receipt{}
	for _, r := range derived {
		want[r.Seq] = r
	}
	sort.Slice(ofRun, func(i, j int) bool { return ofRun[i].Seq < ofRun[j].Seq })
	for _, e := range ofRun {
		r := byHash[e.ReceiptSHA256]
		if r.Seq > rep.LastSeq {
			return rep, problem("ledger", "the firm log holds a receipt for seq %d but the ledger ends at seq %d: the run was rolled back", r.Seq, rep.LastSeq)
		}
		l := lines[r.Seq-1]
		if r.LineSHA256 != l.Hash {
			return rep, problem("ledger", "the receipt for seq %d covers a line with hash %s, the ledger's is %s", r.Seq, r.LineSHA256, l.Hash)
		}
		w, ok := want[r.Seq]
		if !ok {
			return rep, problem("ledger", "the receipt for seq %d covers a line that calls for none", r.Seq)
		}
		if err := sameFacts(r, w); err != nil {
			return rep, problem("receipt", "the receipt for seq %d: %v", r.Seq, err)
		}
		rep.Receipts = append(rep.Receipts, r)
		rep.Covered = r.Seq
	}
	// An ended run whose end is under the checkpoint: every line that calls
	// for a receipt has one, and the ledger ends at the last (a line past
	// it was added after the run ended). An end not yet under a checkpoint
	// is pending, not a fault: the next checkpoint covers it.
	var end *Receipt
	for i := range rep.Receipts {
		if rep.Receipts[i].Kind == KindRun {
			end = &rep.Receipts[i]
		}
	}
	switch {
	case end != nil:
		for _, w := range derived {
			if _, ok := findSeq(rep.Receipts, w.Seq); !ok {
				return rep, problem("receipt", "the run ended but seq %d (%s) has no receipt under checkpoint %d", w.Seq, w.Kind, cp.Number)
			}
		}
		if rep.LastSeq > rep.Covered {
			return rep, problem("ledger", "the ledger runs past its last receipt (seq %d) to seq %d", rep.Covered, rep.LastSeq)
		}
		rep.Complete = true
	case st.Status.Terminal():
		rep.Pending = fmt.Sprintf("the run ended at seq %d; no checkpoint covers its receipt yet", rep.LastSeq)
	}
	return rep, nil
}

func findSeq(rs []Receipt, seq int64) (Receipt, bool) {
	for _, r := range rs {
		if r.Seq == seq {
			return r, true
		}
	}
	return Receipt{}, false
}

// parseLedger parses and links a bundle's ledger lines and folds them.
func parseLedger(firm, run string, raw []string) ([]contracts.Line, reducer.RunState, error) {
	var st reducer.RunState
	if len(raw) == 0 {
		return nil, st, problem("ledger", "the bundle has no ledger lines")
	}
	lines := make([]contracts.Line, len(raw))
	var prev contracts.Line
	for i, s := range raw {
		l, err := contracts.ParseEventLine([]byte(s))
		if err != nil {
			return nil, st, problem("ledger", "line %d: %v", i+1, err)
		}
		if l.FirmID != firm || l.RunID != run {
			return nil, st, problem("ledger", "line %d belongs to another run", i+1)
		}
		if err := contracts.CheckLink(prev.Seq, prev.Hash, prev.RunID, prev.FirmID, l); err != nil {
			return nil, st, problem("ledger", "line %d: %v", i+1, err)
		}
		if st, err = reducer.Apply(st, l); err != nil {
			return nil, st, problem("ledger", "line %d: %v", i+1, err)
		}
		lines[i], prev = l, l
	}
	return lines, st, nil
}

// LogReport is what a verified firm log proves: the checkpoint, and each run
// it records with its receipts' entries.
type LogReport struct {
	FirmID              string
	Checkpoint, LogSize int64
	From                int64
	Runs                map[string][]Entry
}

// VerifyLog checks a stretch of the firm log against its checkpoint, then
// every run it records against that run's bundle among bundles: a run in the
// log with no bundle was deleted or withheld; a bundle that does not verify,
// or lacks a receipt the log records, is named.
func VerifyLog(l LogBundle, keys KeySet, bundles []Bundle) (LogReport, error) {
	rep := LogReport{FirmID: l.FirmID, From: l.Log.From, Runs: map[string][]Entry{}}
	if l.Schema != LogSchema || l.FirmID == "" {
		return rep, problem("firm log", "not a %s document naming a firm", LogSchema)
	}
	if l.Checkpoint == nil {
		return rep, problem("checkpoint", "the log has no checkpoint yet")
	}
	cp, err := OpenCheckpoint(keys, *l.Checkpoint)
	if err != nil {
		return rep, problem("checkpoint", "%v", err)
	}
	if cp.FirmID != l.FirmID {
		return rep, problem("checkpoint", "it is firm %s's, the log is firm %s's", cp.FirmID, l.FirmID)
	}
	rep.Checkpoint, rep.LogSize = cp.Number, cp.Size
	entries, err := l.Log.check(cp)
	if err != nil {
		return rep, problem("firm log", "%v", err)
	}
	for _, e := range entries {
		rep.Runs[e.RunID] = append(rep.Runs[e.RunID], e)
	}
	byRun := map[string]Bundle{}
	for _, b := range bundles {
		byRun[b.RunID] = b
	}
	runs := make([]string, 0, len(rep.Runs))
	for r := range rep.Runs {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	for _, run := range runs {
		b, ok := byRun[run]
		if !ok {
			es := rep.Runs[run]
			return rep, problem("firm log", "run %s has %d receipts in the firm log (entries %d to %d) and no evidence bundle: the run was deleted or withheld",
				run, len(es), es[0].Index, es[len(es)-1].Index)
		}
		if b.FirmID != l.FirmID {
			return rep, problem("bundle", "run %s's bundle is firm %s's", run, b.FirmID)
		}
		if _, err := Verify(b, keys); err != nil {
			return rep, problem("bundle", "run %s: %v", run, err)
		}
		have := map[string]bool{}
		for _, s := range b.Receipts {
			have[s.SHA256()] = true
		}
		for _, e := range rep.Runs[run] {
			if !have[e.ReceiptSHA256] {
				return rep, problem("bundle", "run %s: the firm log records a receipt for seq %d (entry %d) its bundle does not carry", run, e.Seq, e.Index)
			}
		}
	}
	return rep, nil
}

// ErrNoCheckpoint is answered when a firm's log has no checkpoint yet.
var ErrNoCheckpoint = errors.New("evidence: the firm's log has no checkpoint yet")
