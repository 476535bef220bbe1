package main

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// evidenceVerifyCmd checks evidence offline: each FILE is a run's bundle
// (GET /v1/runs/{id}/evidence) or a stretch of the firm log (GET
// /v1/evidence/log). With a firm log, every run it records must be among
// the bundles given. --checkpoint pins the checkpoint the verifier already
// holds: a bundle must be checked against exactly it. A run's pending
// receipts are reported (pending); a line dated after this machine's clock
// is refused. A checkpoint that carries its C2SP signed note has the note
// checked too (origin --origin-prefix/<firm>, the checkpoint's key, the same
// size and head), and the output says so with the note's verifier key.
// With --tsa-cert, every checkpoint must carry an RFC 3161 timestamp token
// from that authority over its body, and the output shows its time.
func evidenceVerifyCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlags("evidence verify")
	var keyFiles, pinned multiFlag
	fs.Var(&keyFiles, "public-key", "PEM `FILE` of public keys you trust (repeatable)")
	fs.Var(&pinned, "checkpoint", "a signed checkpoint `FILE` you hold; every bundle must end at it (repeatable)")
	unanchored := fs.Bool("allow-unanchored-start", false,
		"accept a run whose start has no receipt (started before starts were anchored); its log segment is checked the older, weaker way")
	sinceFile := fs.String("since", "", "a signed checkpoint `FILE` you hold (or a bundle or firm log carrying one): every checkpoint checked must extend it (GET /v1/evidence/log?from=<its size + 1>); a fork is refused naming both")
	prefix := fs.String("origin-prefix", evidence.DefaultOriginPrefix,
		"the `PREFIX` of the origin your firm's log signs its checkpoint notes under (the origin is PREFIX/<firm id>; a deployment's CHECKPOINT_ORIGIN_PREFIX)")
	var witnessKeys multiFlag
	fs.Var(&witnessKeys, "witness", "a witness's cosignature verifier `VKEY` (or a file holding one): every checkpoint must carry its valid cosignature (repeatable)")
	tsaCert := fs.String("tsa-cert", "",
		"PEM `FILE` of your firm's time-stamping authority's certificate (or its CA's): every checkpoint must carry a timestamp that verifies under it")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	witnesses, err := parseWitnesses(witnessKeys)
	if err != nil {
		return err
	}
	tsaCerts, err := readTSACerts(*tsaCert)
	if err != nil {
		return err
	}
	if len(keyFiles) == 0 {
		return usageErr("evidence verify needs --public-key FILE")
	}
	keys := evidence.KeySet{}
	for _, f := range keyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		set, err := evidence.ParsePEM(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, k := range set {
			keys.Add(k)
		}
	}
	held := map[string]bool{}
	for _, f := range pinned {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var s evidence.Signed
		if err := contracts.DecodeStrict(bytes.TrimSpace(b), &s); err != nil {
			return fmt.Errorf("%s: not a signed checkpoint: %w", f, err)
		}
		cp, err := evidence.OpenCheckpoint(keys, s)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := evidence.OpenCheckpointNote(keys, s, cp, evidence.Origin(*prefix, cp.FirmID)); err != nil {
			return fmt.Errorf("%s: checkpoint %d's signed note: %w", f, cp.Number, err)
		}
		held[s.Body] = true
	}
	var since *evidence.Held
	if *sinceFile != "" {
		h, err := readHeld(*sinceFile, keys, *prefix)
		if err != nil {
			return err
		}
		since = &h
	}
	if len(pos) == 0 {
		pos = []string{"-"}
	}
	var bundles []evidence.Bundle
	var names []string
	var logs []evidence.LogBundle
	for _, p := range pos {
		var data []byte
		if p == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(p)
		}
		if err != nil {
			return err
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return fmt.Errorf("%s: not JSON: %w", p, err)
		}
		switch probe.Schema {
		case evidence.BundleSchema:
			var b evidence.Bundle
			if err := contracts.DecodeStrict(data, &b); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			bundles, names = append(bundles, b), append(names, p)
		case evidence.LogSchema:
			var l evidence.LogBundle
			if err := contracts.DecodeStrict(data, &l); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			logs = append(logs, l)
		default:
			return fmt.Errorf("%s: schema %q is neither %s nor %s", p, probe.Schema, evidence.BundleSchema, evidence.LogSchema)
		}
	}
	// A bundle served in parts is joined before it is checked: every part
	// of a run's bundle given, in any order.
	if bundles, names, err = joinParts(bundles, names); err != nil {
		return err
	}
	type runOut struct {
		File       string `json:"file"`
		RunID      string `json:"run_id"`
		Status     string `json:"status"`
		Complete   bool   `json:"complete"`
		LastSeq    int64  `json:"last_seq"`
		Covered    int64  `json:"covered_seq"`
		Checkpoint int64  `json:"checkpoint"`
		Receipts   int    `json:"receipts"`
		// StartAnchored: the run's start receipt is in the firm log
		// (false only under --allow-unanchored-start).
		StartAnchored bool   `json:"start_anchored"`
		Pending       string `json:"pending,omitempty"`
		// CheckpointNote: the checkpoint's signed note verified (absent
		// when the checkpoint carries none).
		CheckpointNote *noteOut `json:"checkpoint_note,omitempty"`
		// Extends: the checkpoint extends the one --since names.
		Extends *evidence.Extension `json:"extends,omitempty"`
		// CheckpointTimestamp: the checkpoint's timestamp token (absent
		// when it carries none and --tsa-cert was not given).
		CheckpointTimestamp *timestampOut `json:"checkpoint_timestamp,omitempty"`
	}
	out := struct {
		Verified bool     `json:"verified"`
		Runs     []runOut `json:"runs"`
		Logs     []any    `json:"firm_logs,omitempty"`
		// Witnesses cosigned every checkpoint verified (--witness).
		Witnesses []string `json:"witnesses,omitempty"`
	}{Verified: true, Runs: []runOut{}}
	for _, w := range witnesses {
		out.Witnesses = append(out.Witnesses, w.Name)
	}
	if err := evidence.CheckOrigin(evidence.Origin(*prefix, "firm")); err != nil {
		return usageErr("--origin-prefix: %v", err)
	}
	opts := evidence.Options{AllowUnanchoredStart: *unanchored, Now: time.Now(), OriginPrefix: *prefix, Since: since, Witnesses: witnesses, TSACerts: tsaCerts}
	// With a firm log, the log proves the extension of --since: its runs'
	// bundles need not reach back before the held checkpoint's end.
	bundleOpts := opts
	if len(logs) > 0 {
		bundleOpts.Since = nil
	}
	for i, b := range bundles {
		rep, err := evidence.VerifyWith(b, keys, bundleOpts)
		if err != nil {
			return fmt.Errorf("%s: run %s: %w", names[i], b.RunID, err)
		}
		if len(held) > 0 && !held[b.Checkpoint.Body] {
			return fmt.Errorf("%s: run %s: checked against checkpoint %d, which is not a checkpoint you hold: fetch the bundle with ?checkpoint=N", names[i], b.RunID, rep.Checkpoint)
		}
		out.Runs = append(out.Runs, runOut{File: names[i], RunID: rep.RunID, Status: rep.Status, Complete: rep.Complete,
			LastSeq: rep.LastSeq, Covered: rep.Covered, Checkpoint: rep.Checkpoint, Receipts: len(rep.Receipts),
			StartAnchored: rep.StartAnchored, Pending: rep.Pending, CheckpointNote: noteReport(keys, *b.Checkpoint, rep.NoteOrigin),
			Extends: rep.Extends, CheckpointTimestamp: timestampReport(rep.Timestamp)})
	}
	for _, l := range logs {
		rep, err := evidence.VerifyLogWith(l, keys, bundles, opts)
		if err != nil {
			return fmt.Errorf("firm log: %w", err)
		}
		if len(held) > 0 && !held[l.Checkpoint.Body] {
			return fmt.Errorf("firm log: ends at checkpoint %d, which is not a checkpoint you hold", rep.Checkpoint)
		}
		lo := map[string]any{"firm_id": rep.FirmID, "checkpoint": rep.Checkpoint, "entries_from": rep.From,
			"entries_to": rep.LogSize, "runs": len(rep.Runs)}
		if n := noteReport(keys, *l.Checkpoint, rep.NoteOrigin); n != nil {
			lo["checkpoint_note"] = n
		}
		if rep.Extends != nil {
			lo["extends"] = rep.Extends
		}
		if ts := timestampReport(rep.Timestamp); ts != nil {
			lo["checkpoint_timestamp"] = ts
		}
		out.Logs = append(out.Logs, lo)
	}
	return writeJSON(stdout, out)
}

// parseWitnesses reads --witness values: each a vkey, or a file holding one.
func parseWitnesses(vals []string) ([]evidence.WitnessKey, error) {
	var out []evidence.WitnessKey
	for _, v := range vals {
		w, err := evidence.ParseWitnessKey(v)
		if err != nil {
			b, ferr := os.ReadFile(v)
			if ferr != nil {
				return nil, usageErr("--witness: %v", err)
			}
			if w, err = evidence.ParseWitnessKey(string(b)); err != nil {
				return nil, usageErr("--witness %s: %v", v, err)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// noteOut is a verified checkpoint note as the output shows it: its origin,
// and the verifier key ("vkey") a signed-note tool checks it with.
type noteOut struct {
	Verified    bool   `json:"verified"`
	Origin      string `json:"origin"`
	VerifierKey string `json:"vkey,omitempty"`
}

// noteReport describes the note of checkpoint s that verified under origin
// (nil when it carried none).
func noteReport(keys evidence.KeySet, s evidence.Signed, origin string) *noteOut {
	if origin == "" {
		return nil
	}
	n := &noteOut{Verified: true, Origin: origin}
	var c struct {
		KeyID string `json:"key_id"`
	}
	if json.Unmarshal([]byte(s.Body), &c) == nil {
		if k, ok := keys[c.KeyID]; ok {
			n.VerifierKey, _ = evidence.VerifierKey(origin, k.Key)
		}
	}
	return n
}

// readTSACerts reads --tsa-cert's file (none: nil).
func readTSACerts(file string) ([]*x509.Certificate, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	certs, err := timestamp.ParseCertificates(b)
	if err != nil {
		return nil, fmt.Errorf("--tsa-cert %s: %w", file, err)
	}
	return certs, nil
}

// timestampOut is a checkpoint's timestamp token as the output shows it:
// verified under --tsa-cert, with the time it states, or present and not
// checked (no --tsa-cert).
type timestampOut struct {
	Verified bool   `json:"verified"`
	Time     string `json:"time,omitempty"`
	Note     string `json:"note,omitempty"`
}

func timestampReport(r evidence.TimestampReport) *timestampOut {
	switch {
	case r.Checked:
		return &timestampOut{Verified: true, Time: r.At}
	case r.Present:
		return &timestampOut{Note: "not checked: give --tsa-cert"}
	}
	return nil
}

// joinParts replaces the parts of each run's bundle among bundles (named
// names) with the joined bundle, named by its parts' files.
func joinParts(bundles []evidence.Bundle, names []string) ([]evidence.Bundle, []string, error) {
	var outB []evidence.Bundle
	var outN []string
	parts := map[string][]evidence.Bundle{}
	files := map[string][]string{}
	var order []string
	for i, b := range bundles {
		if b.Part == nil {
			outB, outN = append(outB, b), append(outN, names[i])
			continue
		}
		if _, seen := parts[b.RunID]; !seen {
			order = append(order, b.RunID)
		}
		parts[b.RunID] = append(parts[b.RunID], b)
		files[b.RunID] = append(files[b.RunID], names[i])
	}
	for _, run := range order {
		whole, err := evidence.Join(parts[run])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: run %s: %w", strings.Join(files[run], ", "), run, err)
		}
		outB, outN = append(outB, whole), append(outN, strings.Join(files[run], "+"))
	}
	return outB, outN, nil
}

// readHeld reads the checkpoint a verifier holds from file: a signed
// checkpoint ({"body", "signature", ...}: a bundle's .checkpoint), or a
// bundle or firm log, whose checkpoint is taken. It must verify under keys,
// with its note when it carries one.
func readHeld(file string, keys evidence.KeySet, prefix string) (evidence.Held, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return evidence.Held{}, err
	}
	var doc struct {
		Schema     string           `json:"schema"`
		Checkpoint *evidence.Signed `json:"checkpoint"`
	}
	var s evidence.Signed
	if json.Unmarshal(b, &doc) == nil && doc.Schema != "" {
		if doc.Checkpoint == nil {
			return evidence.Held{}, fmt.Errorf("--since %s: the %s document carries no checkpoint", file, doc.Schema)
		}
		s = *doc.Checkpoint
	} else if err := contracts.DecodeStrict(bytes.TrimSpace(b), &s); err != nil {
		return evidence.Held{}, fmt.Errorf("--since %s: not a signed checkpoint, bundle or firm log: %w", file, err)
	}
	h, err := evidence.OpenHeld(keys, s)
	if err != nil {
		return h, fmt.Errorf("--since %s: %w", file, err)
	}
	if _, err := evidence.OpenCheckpointNote(keys, s, h.Checkpoint, evidence.Origin(prefix, h.Checkpoint.FirmID)); err != nil {
		return h, fmt.Errorf("--since %s: checkpoint %d's signed note: %w", file, h.Checkpoint.Number, err)
	}
	return h, nil
}
