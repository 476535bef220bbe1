package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// signedExport is the ledger of ledger(t) as GET .../events?head=true
// exports it: the lines, then the head the store signed with key.
func signedExport(t *testing.T, key string, lines [][]byte) []byte {
	t.Helper()
	k, err := anchor.Parse(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	last, err := contracts.ParseEventLine(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	mac, keyID, err := anchor.NewKeyring(k).SignHead(context.Background(), firmID, runID, last.Seq, last.Hash)
	if err != nil {
		t.Fatal(err)
	}
	head := contracts.EncodeHeadLine(contracts.HeadLine{FirmID: firmID, RunID: runID, Seq: last.Seq, Hash: last.Hash, MAC: mac, KeyID: keyID})
	return join(append(append([][]byte{}, lines...), head))
}

// Issue 11, item 2: `warrant ledger verify --key` holds an export to the
// run's signed head, so a ledger a table writer rewrote and re-chained (each
// line valid) does not verify; without --key the head line is checked for
// seq and hash only.
func TestLedgerVerifyWithKey(t *testing.T) {
	key := "hmac:" + strings.Repeat("5a", 32)
	other := "hmac:" + strings.Repeat("a5", 32)
	good := ledger(t)
	signed := signedExport(t, key, good)
	keyFile := filepath.Join(t.TempDir(), "ledger.key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The same run with a different final answer, chained after line 7: a
	// valid ledger on its own, but the signed head names the real line 8.
	prev, err := contracts.ParseEventLine(good[len(good)-2])
	if err != nil {
		t.Fatal(err)
	}
	c := contracts.ChainAfter(prev)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	rewritten, err := c.Append(&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Withdrawn."})
	if err != nil {
		t.Fatal(err)
	}
	headOnly := bytes.SplitAfter(signed, []byte("\n"))[len(good)]
	// Issue 17, item 1: every line, then a head the key really signed at
	// line 7: line 8 runs past it, unsigned.
	head7 := bytes.SplitAfter(signedExport(t, key, good[:len(good)-1]), []byte("\n"))[len(good)-1]
	pastHead := append(join(good), head7...)
	forged := append(join(append(append([][]byte{}, good[:len(good)-1]...), rewritten.Raw)), headOnly...)

	for _, tc := range []struct {
		name   string
		stdin  []byte
		args   []string
		code   int
		stderr string
	}{
		{"signed export", signed, []string{"--key", key}, 0, ""},
		{"key from a file", signed, []string{"--key", "@" + keyFile}, 0, ""},
		{"another key", signed, []string{"--key", other}, 1, "line 9: "},
		{"no head line", join(good), []string{"--key", key}, 1, "signed ledger head"},
		{"head without --key", signed, nil, 0, ""},
		{"ledger cut short", append(join(good[:len(good)-1]), headOnly...), nil, 1, "line 8: "},
		{"rewritten last line", forged, []string{"--key", key}, 1, "line 9: "},
		{"rewritten last line, no key", forged, nil, 1, "line 9: "},
		{"a line past the signed head", pastHead, []string{"--key", key}, 1, "line 9: "},
		{"a line past the head, no key", pastHead, nil, 1, "line 9: "},
		{"line after the head", append(bytes.Clone(signed), append(good[0], '\n')...), []string{"--key", key}, 1, "line 10: "},
		{"bad key spec", signed, []string{"--key", "hmac:beef"}, 2, "--key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(string(tc.stdin), append([]string{"ledger", "verify"}, tc.args...)...)
			check(t, got, tc.code, "", tc.stderr)
			if strings.Contains(got.stderr, strings.Repeat("5a", 8)) {
				t.Fatalf("stderr echoes the key: %s", got.stderr)
			}
		})
	}
}

// `warrant ledger audit` traces the e-mail to its warrant, and names an
// effect without provenance (here: no approval.decided line, a ledger the
// reducer also refuses, so the audit stops at the verification).
func TestLedgerAudit(t *testing.T) {
	key := "hmac:" + strings.Repeat("5a", 32)
	good := newEmailRun(t).lines(t)
	ok := runCLI(string(signedExport(t, key, good)), "ledger", "audit", "--key", key)
	check(t, ok, 0, "audit: 1 executed effect(s), every one with provenance; 2 decision(s) re-derived", "")
	if !strings.Contains(ok.stdout, "effect "+sentEffect+" send_client_email (seq 6, success)") ||
		!strings.Contains(ok.stdout, "warrant "+heldApproval+": asked at seq 3, approved at seq 4 by c0c0c0c0-1111-4222-8333-444455556666 as counsel (separation enforced), released at seq 5") ||
		!strings.Contains(ok.stdout, "; ledger verified, signed head at seq 7 verified") {
		t.Fatalf("audit output:\n%s", ok.stdout)
	}
	// Line 4 (approval.decided) dropped: the chain breaks before the audit.
	broken := append(append([][]byte{}, good[:3]...), good[4:]...)
	check(t, runCLI(string(join(broken)), "ledger", "audit"), 1, "", "line 4: ")
}

// `warrant ledger audit` shows the policy's decision as recorded (version
// and fired rules) and, for a call counsel edited, the input that ran.
func TestLedgerAuditShowsRulesAndEdits(t *testing.T) {
	r := newEmailRun(t)
	r.edit = true
	evs := r.events(t)
	h := evs[1].(*contracts.ToolRequested).InputSHA256
	eh := evs[3].(*contracts.ApprovalDecided).EditedInputSHA256
	got := runCLI(r.export(t), "ledger", "audit")
	check(t, got, 0, "audit: 1 executed effect(s), every one with provenance", "")
	for _, want := range []string{"policy require_approval (high, tools.send_client_email, version " + r.policy.Version() +
		", fired email.recipient_outside_client email.client_communication email.copy_outside_firm)",
		"approved as edited at seq 4", "ran counsel's edit " + eh[:16] + ", not the requested " + h[:16]} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("audit output lacks %q:\n%s", want, got.stdout)
		}
	}
}
