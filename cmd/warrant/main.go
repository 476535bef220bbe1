// Command warrant is the operator's tool for checking what the deployed system
// did: hash a tool input the way a warrant binds it, verify and fold a ledger
// export with the same reducer the agent uses, ask the risk policy about a
// tool, price a model call, and record counsel's reconciliation of an effect
// through the API; and for connecting a firm's systems: import an MCP
// server's tools as catalog entries, check a catalog against its servers,
// and check the catalog, the agents and the policy together, before they
// are published. It is never deployed, and it calls AWS only to
// verify a ledger head with a KMS key (ledger verify --key kms:...) and to
// read a tool server's secret (tools check, tools import).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const usage = `usage:
  warrant hash [FILE]
        print the tool_input_hash (hex sha256 of the RFC 8785 form) of a JSON document
  warrant ledger verify [--key KEY] [FILE]
        verify an NDJSON ledger export line by line and print the folded run state;
        with --key, the export must end with the run's signed head (GET
        /v1/runs/{id}/events?head=true) and the head's MAC must verify under KEY:
        "hmac:<hex>" (the local stack's key), "kms:<key ARN or alias>" (asks AWS KMS,
        with the usual AWS credentials), or "@FILE" holding either
  warrant ledger audit [--key KEY] [--policy FILE]... [--matter-ledger FILE]... [FILE]
        verify the export as ledger verify does, then trace every executed effect to its
        provenance: the tool.requested whose input re-hashes to its input_sha256, the
        policy's decision, and for a warranted call counsel's approval (recorded as
        counsel, not the requester unless the firm waived separation of duties) and the
        run.released that burned the warrant, with one effect_ref; then decide every
        recorded decision again from the record alone (tool.requested, counsel's edit in
        approval.decided, the resume's policy_check) on the input and the metadata the
        line records (the firm's and the client's domains as they were), under the
        policy of the version the line names: the embedded policy, or the --policy
        files (full or overlays; repeat it for a run that spans versions). A decision
        whose prior condition read another run of the matter (matter_steps) is decided
        on that run's export, given with --matter-ledger (verified, the step found by
        seq and hash, of the same firm and matter). Exit 1 naming the first effect
        without provenance, the first decision that does not re-derive (seq, what
        differs), the other run whose export it needs, or a version no policy given is
  warrant evidence verify --public-key FILE [--checkpoint FILE]... [--since FILE] [--witness VKEY]... [--allow-unanchored-start] [BUNDLE|LOG]...
        check evidence offline, with nothing but the firm's public keys (GET /v1/keys;
        FILE may hold several PEM keys, --public-key may repeat): each BUNDLE is a run's
        evidence (GET /v1/runs/{id}/evidence): the checkpoint's signature, the firm log's
        chain to it from the run's start receipt, each receipt's signature and key, that
        the log's receipts of the run are exactly the bundle's, that every line calling
        for a receipt written over 5 minutes before the checkpoint has one (younger:
        "pending"), and that the ledger matches every receipt and ends at the last one
        once the run ended (--allow-unanchored-start also accepts a run started before
        starts were anchored, checked the older, weaker way); a LOG (GET /v1/evidence/log) is checked the
        same way, and every run it records must be among the BUNDLEs (one missing was
        deleted or withheld). --checkpoint FILE is a checkpoint you already hold (the
        "checkpoint" member of a bundle or log, or an object of the checkpoint bucket):
        the evidence must end exactly at it. --since FILE is an older checkpoint you hold
        (or a bundle or log carrying one): each LOG's checkpoint (each BUNDLE's when no LOG
        is given) must extend it, its
        log passing through the held head at the held size (fetch GET /v1/evidence/log
        ?from=<held size + 1>, which also carries the checkpoints between, whose chain
        must lead back to the held one); two checkpoints that do not extend each other
        are refused as a fork, naming both. --witness VKEY (a
        witness's cosignature key, or a file holding it; repeatable) requires every
        checkpoint to carry that witness's valid cosignature (docs/EVIDENCE.md, "A
        witness"). Prints what was verified; exit 1 naming the first check that failed
  warrant policy decide TOOL [--policy FILE] [--input FILE] [--metadata FILE]
        print the risk policy's decision, with the rules that fired, for a call of TOOL
        (default: the embedded policy; FILE may also be an overlay of it, {"extends":
        "embedded", ...}). --input is the call's JSON input, canonicalized as the agent
        does ("-": stdin); --metadata a JSON object of what the run knows: firm_id,
        matter_id, agent_key, user_id, roles, firm_domains, client_domains. Without
        --input, it prints the tool's floor, the tier the rules that need no input
        give it, and under not_evaluated the rules it could not evaluate (the
        runtime always has the input; a rule it cannot evaluate there fires)
  warrant policy decide [TOOL] --ledger EXPORT --seq N [--policy FILE] [--input FILE] [--metadata FILE]
        decide the call a run's ledger export (verified as ledger verify does) records
        at tool.requested seq N, as the runtime would decide it now: on the line's input
        and metadata (unless --input or --metadata replaces them), its destinations
        traced over the lines before it; prints the decision as above. Exit 1 when the
        line's input, or a source its trace reads, is sealed
  warrant policy check --ledger EXPORT [--ledger EXPORT]... [--policy FILE] [--json]
        replay a policy (FILE, full or an overlay; default the embedded policy) over
        every model call (tool.requested) of the runs' ledger exports, each verified as
        ledger verify does and each call decided as the runtime would decide it now (its
        recorded input and metadata, its destinations traced over the lines before it),
        and print each call whose outcome differs from the one recorded: run id, seq,
        tool, recorded action/tier -> new action/tier, and the ids of the rules that
        fire now but did not then and the reverse (never an input or a value); then a
        summary: calls replayed, unchanged, newly held, newly denied, newly allowed
        (less strict), otherwise changed, not decided (input or sources sealed). --json
        prints the same as one JSON document. Exit 0 whatever differs; 1 on a file
        that does not read, an export that does not verify (FILE: line N) or a policy
        that does not load (naming the field)
  warrant effect reconcile RUN_ID EFFECT_REF --outcome executed|not_executed
                 [--external-ref REF] [--note TEXT] [--api URL] [--token-file FILE] [--header "Name: value"]...
        record, as counsel, what really happened to an effect whose outcome was lost with
        its worker (the run failed with effect_outcome_unknown; the effect_ref is in the
        run view's unreconciled_effects), through the API: POST
        /v1/runs/{run}/effects/{ref}/reconcile with the bearer token of $WARRANT_TOKEN or
        --token-file, at --api or $WARRANT_API; prints the recorded reconciliation.
        Nothing is executed, whatever the outcome
  warrant tools check --catalog FILE [--policy FILE] [--timeout 20s]
        check a tool catalog (TOOL_CATALOG) before it is published: it loads as the
        functions load it, every MCP server it names is reached (credentials from
        Secrets Manager with the usual AWS configuration) and offers every tool with
        exactly the pinned input schema (on drift: the server's current hash), and the
        risk policy (default: the embedded one) lists every tool; exit 1 naming each
        problem
  warrant tools import --server URL [--tool NAME [--as NAME]] [--name NAME] [--timeout 20s]
                [--auth none|bearer|oauth_client_credentials] [--secret SECRET]
                [--token-url URL --client-id ID --client-secret SECRET --scope SCOPE...]
        print an MCP server's tools (or the one --tool names) as a tool catalog document
        to merge into TOOL_CATALOG: the server's entry (named --name, default the first
        label of its host name or "server"; https, or http for a loopback host only),
        with the credentials the flags name (secrets read from Secrets Manager with the
        usual AWS configuration, as tools check reads them), and each tool with its
        description and input schema as the server lists them and the schema's pin
        (schema_sha256, the hash the runtime and tools check hold it to). Each member
        only you can decide, summary, matter_field, class and timeout, holds
        "{{TO_SET}} ...", which the catalog refuses, naming the member, until you set it;
        the server's hints (readOnlyHint, ...) go to stderr and decide nothing. Exit 1
        naming what failed: a --tool the server lacks (with the tools it has), a server
        not reached, an auth failure (a secret not read, credentials refused), or a tool
        whose schema the catalog cannot take (the others are still printed)
  warrant config check [--catalog FILE] [--agents FILE] [--policy FILE]
        check the configuration documents together before they are published, at least
        one given; the others are the embedded ones a stack without them runs. Each loads
        as the functions load it (TOOL_CATALOG, AGENTS, TOOL_POLICY: whole or an overlay;
        an agent's system_prompt_file is read from the agents FILE's folder, the bundle's
        top), every tool an agent names is in the catalog, every agent's model_id has a
        price (PRICING_FILE, else the embedded table; an agent without one runs the
        stack's MODEL_ID, which the functions check when they start), and every catalog
        tool has a policy entry: its own member of the policy's "tools" (a tool without
        one is not refused, but takes the policy's default tier, high or prohibited, on
        every call). One line per fault, naming the document, the field and its line and
        column; exit 1 on any, else one line saying what passed
  warrant price MODEL INPUT OUTPUT [--cache-read N] [--cache-write N]
        print the USD cost of one model call (PRICING_FILE overrides the embedded
        table, as it does for the agent)

FILE absent or "-" reads stdin.
Exit status: 0 ok, 1 the input or lookup failed, 2 usage error.
`

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// usageError is a command line we could not make sense of, so run can tell it
// apart from a failure of the work itself.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := dispatch(args, stdin, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "warrant: %v\n\n%s", err, usage)
		return 2
	default:
		var le *contracts.LineError
		if errors.As(err, &le) {
			// Bare "line N: why", so an operator can jump to the line.
			fmt.Fprintln(stderr, le)
		} else {
			fmt.Fprintf(stderr, "warrant: %v\n", err)
		}
		return 1
	}
}

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("no command")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		return flag.ErrHelp
	case "hash":
		return hashCmd(rest, stdin, stdout)
	case "ledger":
		switch {
		case len(rest) > 0 && rest[0] == "verify":
			return verifyCmd(rest[1:], stdin, stdout)
		case len(rest) > 0 && rest[0] == "audit":
			return auditCmd(rest[1:], stdin, stdout)
		}
		return usageErr("ledger needs the subcommand verify or audit")
	case "policy":
		switch {
		case len(rest) > 0 && rest[0] == "decide":
			return decideCmd(rest[1:], stdin, stdout)
		case len(rest) > 0 && rest[0] == "check":
			return policyCheckCmd(rest[1:], stdin, stdout)
		}
		return usageErr("policy needs the subcommand decide or check")
	case "price":
		return priceCmd(rest, stdout)
	case "tools":
		switch {
		case len(rest) > 0 && rest[0] == "check":
			return toolsCheckCmd(rest[1:], stdout)
		case len(rest) > 0 && rest[0] == "import":
			return toolsImportCmd(rest[1:], stdout, stderr)
		}
		return usageErr("tools needs the subcommand check or import")
	case "config":
		if len(rest) == 0 || rest[0] != "check" {
			return usageErr("config needs the subcommand check")
		}
		return configCheckCmd(rest[1:], stdout)
	case "evidence":
		if len(rest) == 0 || rest[0] != "verify" {
			return usageErr("evidence needs the subcommand verify")
		}
		return evidenceVerifyCmd(rest[1:], stdin, stdout)
	case "effect":
		if len(rest) == 0 || rest[0] != "reconcile" {
			return usageErr("effect needs the subcommand reconcile")
		}
		return reconcileCmd(rest[1:], stdout)
	}
	return usageErr("unknown command %q", cmd)
}

func hashCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	pos, err := parse(newFlags("hash"), args)
	if err != nil {
		return err
	}
	name, data, err := readInput(pos, stdin)
	if err != nil {
		return err
	}
	h, err := contracts.InputHash(data)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintln(stdout, h)
	return nil
}

// ledgerArgs parses the arguments of a ledger subcommand: [--key KEY] [FILE].
// keys is nil without --key.
func ledgerArgs(name string, args []string) (pos []string, keys reducer.HeadVerifier, err error) {
	fs := newFlags(name)
	keySpec := fs.String("key", "", "ledger `KEY`: hmac:<hex>, kms:<key id>, or @FILE")
	if pos, err = parse(fs, args); err != nil || *keySpec == "" {
		return pos, nil, err
	}
	keys, err = ledgerKey(*keySpec)
	return pos, keys, err
}

func verifyCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	pos, keys, err := ledgerArgs("ledger verify", args)
	if err != nil {
		return err
	}
	name, r, closeFn, err := openInput(pos, stdin)
	if err != nil {
		return err
	}
	defer closeFn()
	var state reducer.RunState
	if keys != nil {
		state, _, err = reducer.VerifySigned(context.Background(), r, keys)
	} else {
		state, err = reducer.Verify(r)
	}
	if err != nil {
		var le *contracts.LineError
		if errors.As(err, &le) {
			return err // "line N: why", as run prints it
		}
		return fmt.Errorf("%s: %w", name, err) // the ledger has no lines
	}
	return writeJSON(stdout, state)
}

func decideCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlags("policy decide")
	policyFile := fs.String("policy", "", "policy `FILE`, full or an overlay (default: the embedded policy)")
	inputFile := fs.String("input", "", "the call's JSON input `FILE` (\"-\": stdin)")
	metaFile := fs.String("metadata", "", "the call's metadata `FILE` (JSON)")
	ledgerFile := fs.String("ledger", "", "decide the call a run's ledger `EXPORT` records at --seq")
	seq := fs.Int64("seq", 0, "the `SEQ` of the export's tool.requested line to decide")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *ledgerFile != "" || *seq != 0 {
		p, err := loadPolicy(*policyFile)
		if err != nil {
			return err
		}
		return decideRecorded(p, pos, *ledgerFile, *seq, *inputFile, *metaFile, stdin, stdout)
	}
	if len(pos) != 1 {
		return usageErr("policy decide needs exactly one TOOL")
	}
	if *inputFile == "-" && *metaFile == "-" {
		return usageErr("only one of --input and --metadata can read stdin")
	}
	p, err := toolpolicy.Embedded()
	if *policyFile != "" {
		p, err = toolpolicy.LoadFile(*policyFile)
	}
	if err != nil {
		return err
	}
	call := toolpolicy.Call{Tool: pos[0]}
	if err := readCallFiles(&call, *inputFile, *metaFile, stdin); err != nil {
		return err
	}
	if call.Input == nil {
		// A name-only question: the floor and the rules that could not be
		// evaluated, not the fail-closed decision (which would call every
		// court filing prohibited because the matter wall needs the input).
		o, err := p.Outline(call.Tool, call.Meta)
		if err != nil {
			return err
		}
		return writeJSON(stdout, o)
	}
	d, err := p.Decide(call)
	if err != nil {
		return err
	}
	return writeJSON(stdout, d)
}

// readCallFiles sets the call's input (canonical) and metadata from
// --input and --metadata, those given.
func readCallFiles(call *toolpolicy.Call, inputFile, metaFile string, stdin io.Reader) error {
	if inputFile != "" {
		name, data, err := readInput([]string{inputFile}, stdin)
		if err != nil {
			return err
		}
		// The agent hands the policy the canonical bytes it hashes, and
		// refuses what it cannot canonicalize; so does this command.
		if call.Input, _, err = contracts.CanonicalInput(data); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if metaFile != "" {
		name, data, err := readInput([]string{metaFile}, stdin)
		if err != nil {
			return err
		}
		var m toolpolicy.Metadata
		if err := contracts.DecodeStrict(data, &m); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		call.Meta = m
	}
	return nil
}

func priceCmd(args []string, stdout io.Writer) error {
	fs := newFlags("price")
	cacheRead := fs.String("cache-read", "0", "cache read input `N` tokens")
	cacheWrite := fs.String("cache-write", "0", "cache write input `N` tokens")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usageErr("price needs MODEL INPUT OUTPUT")
	}
	var u contracts.Usage
	for _, c := range []struct {
		name, s string
		dst     *int64
	}{
		{"INPUT", pos[1], &u.InputTokens},
		{"OUTPUT", pos[2], &u.OutputTokens},
		{"--cache-read", *cacheRead, &u.CacheReadInputTokens},
		{"--cache-write", *cacheWrite, &u.CacheWriteInputTokens},
	} {
		n, err := strconv.ParseInt(c.s, 10, 64)
		if err != nil || n < 0 {
			return usageErr("%s must be a non-negative token count, got %q", c.name, c.s)
		}
		*c.dst = n
	}
	t, err := pricing.FromEnv()
	if err != nil {
		return err
	}
	cost, err := t.TokenCost(pos[0], u)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, pricing.FormatUSD(cost))
	return nil
}

// newFlags makes a FlagSet that reports instead of printing or exiting, so
// run decides the exit status and tests see everything.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse lets flags and positional arguments mix ("policy decide TOOL --policy
// FILE" reads naturally), which flag.Parse alone does not: it stops at the
// first positional. "--" still ends the flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageErr("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func openInput(pos []string, stdin io.Reader) (string, io.Reader, func(), error) {
	switch {
	case len(pos) > 1:
		return "", nil, nil, usageErr("at most one FILE")
	case len(pos) == 0 || pos[0] == "-":
		return "stdin", stdin, func() {}, nil
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return "", nil, nil, err
	}
	return pos[0], f, func() { f.Close() }, nil
}

func readInput(pos []string, stdin io.Reader) (string, []byte, error) {
	name, r, closeFn, err := openInput(pos, stdin)
	if err != nil {
		return "", nil, err
	}
	defer closeFn()
	data, err := io.ReadAll(r)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, data, nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ledgerKey reads --key. A spec may hold key material, so errors never echo
// it; "@FILE" keeps it out of the shell history.
func ledgerKey(spec string) (reducer.HeadVerifier, error) {
	if path, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		spec = strings.TrimSpace(string(b))
	}
	key, err := anchor.Parse(spec, func() anchor.KMSClient {
		cfg, err := awsconfig.LoadDefaultConfig(context.Background())
		if err != nil {
			return failingKMS{err}
		}
		return kms.NewFromConfig(cfg)
	})
	if err != nil {
		return nil, usageErr("--key: %v", err)
	}
	return anchor.NewKeyring(key), nil
}

// failingKMS answers every call with the error that kept the AWS
// configuration from loading.
type failingKMS struct{ err error }

func (f failingKMS) GenerateMac(context.Context, *kms.GenerateMacInput, ...func(*kms.Options)) (*kms.GenerateMacOutput, error) {
	return nil, f.err
}

func (f failingKMS) VerifyMac(context.Context, *kms.VerifyMacInput, ...func(*kms.Options)) (*kms.VerifyMacOutput, error) {
	return nil, f.err
}

func auditCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlags("ledger audit")
	keySpec := fs.String("key", "", "ledger `KEY`: hmac:<hex>, kms:<key id>, or @FILE")
	var policyFiles []string
	fs.Func("policy", "a policy `FILE` (full or an overlay) the ledger's decisions name by version; repeatable (default: the embedded policy)",
		func(v string) error { policyFiles = append(policyFiles, v); return nil })
	var matterFiles []string
	fs.Func("matter-ledger", "the export `FILE` of another run of the matter whose step a decision's prior condition read (matter_steps); repeatable",
		func(v string) error { matterFiles = append(matterFiles, v); return nil })
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if countStdin(matterFiles...) > 0 {
		return usageErr("--matter-ledger: a file, not stdin")
	}
	// The matter's other runs, each verified as the ledger is, by run id.
	matter := map[string][]contracts.Line{}
	for _, f := range matterFiles {
		ls, err := readVerifiedLedger(f, stdin)
		if err != nil {
			return err
		}
		if len(ls) > 0 {
			matter[ls[0].RunID] = ls
		}
	}
	var keys reducer.HeadVerifier
	if *keySpec != "" {
		if keys, err = ledgerKey(*keySpec); err != nil {
			return err
		}
	}
	var policies []*toolpolicy.Policy
	for _, f := range policyFiles {
		p, err := toolpolicy.LoadFile(f)
		if err != nil {
			return err
		}
		policies = append(policies, p)
	}
	if len(policies) == 0 {
		p, err := toolpolicy.Embedded()
		if err != nil {
			return err
		}
		policies = append(policies, p)
	}
	name, data, err := readInput(pos, stdin)
	if err != nil {
		return err
	}
	// The ledger must verify first (and, with the key, match its signed
	// head): provenance read from a ledger that does not is worth nothing.
	signed := ""
	if keys != nil {
		_, head, err := reducer.VerifySigned(context.Background(), bytes.NewReader(data), keys)
		if err != nil {
			return err
		}
		signed = fmt.Sprintf(", signed head at seq %d verified with %s", head.Seq, head.KeyID)
	} else if _, err := reducer.Verify(bytes.NewReader(data)); err != nil {
		var le *contracts.LineError
		if errors.As(err, &le) {
			return err
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	var lines []contracts.Line
	if _, err := contracts.ReadExport(bytes.NewReader(data), func(l contracts.Line) error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		return err
	}
	// What the audit prints is its finding: nothing of it goes out unless
	// the whole ledger passes.
	var out bytes.Buffer
	effects, err := reducer.Audit(lines)
	if err != nil {
		return err
	}
	for _, p := range effects {
		policy := p.RiskTier + ", " + p.MatchedPolicy
		if p.PolicyVersion != "" {
			policy += ", version " + p.PolicyVersion
		}
		if len(p.FiredRules) > 0 {
			ids := make([]string, len(p.FiredRules))
			for i, r := range p.FiredRules {
				ids[i] = r.ID
			}
			policy += ", fired " + strings.Join(ids, " ")
		}
		fmt.Fprintf(&out, "effect %s %s (seq %d, %s): requested at seq %d, input %s, policy %s (%s)",
			p.EffectRef, p.ToolName, p.CompletedSeq, p.Status, p.RequestedSeq, p.InputSHA256[:16], p.Action, policy)
		if p.ApprovalID != "" {
			approved := "approved"
			if p.ExecutedInputSHA256 != "" {
				approved = "approved as edited"
			}
			fmt.Fprintf(&out, "; warrant %s: asked at seq %d, %s at seq %d by %s as %s (separation %s), released at seq %d",
				p.ApprovalID, p.BlockedSeq, approved, p.DecidedSeq, p.DecidedBy, p.DecidedAs, p.Separation, p.ReleasedSeq)
		}
		if p.ExecutedInputSHA256 != "" {
			fmt.Fprintf(&out, "; ran counsel's edit %s, not the requested %s", p.ExecutedInputSHA256[:16], p.InputSHA256[:16])
		}
		if p.Reuses > 0 {
			fmt.Fprintf(&out, "; answered %d more time(s) from its record", p.Reuses)
		}
		fmt.Fprintln(&out)
	}
	// Every decision, decided again from the record alone.
	decisions, err := reducer.RederiveWith(lines, reducer.RederiveOptions{Matter: matter}, policies...)
	if err != nil {
		return err
	}
	var used []string
	sealed := 0
	for _, d := range decisions {
		what := d.ToolName
		if d.Type == contracts.TypeApprovalDecided {
			what += " (counsel's edit)"
		}
		fired := ""
		if len(d.FiredRules) > 0 {
			fired = ", fired " + strings.Join(d.FiredRules, " ")
		}
		if len(d.LimitsReached) > 0 {
			fired += ", limits reached " + strings.Join(d.LimitsReached, " ")
		}
		for _, st := range d.MatterSteps {
			how := "checked in its export"
			if st.Unread {
				how = "recorded unread"
			}
			fired += fmt.Sprintf(", read run %s's %s at seq %d (%s)", st.RunID, st.Tool, st.Seq, how)
		}
		verdict := "re-derived"
		if d.Sealed {
			// Issue 26: the input is sealed in the stored ledger; the
			// decision's record was checked, not decided again.
			verdict, sealed = "sealed, as recorded (its input is sealed: not decided again)", sealed+1
		}
		fmt.Fprintf(&out, "decision seq %d %s %s: %s (%s%s), input %s, metadata %s, policy version %s: %s\n",
			d.Seq, d.Type, what, d.Action, d.RiskTier, fired, d.InputSHA256[:16], d.MetadataSHA256[:16], d.PolicyVersion, verdict)
		if !slices.Contains(used, d.PolicyVersion) {
			used = append(used, d.PolicyVersion)
		}
	}
	under := ""
	switch len(used) {
	case 0:
	case 1:
		under = " under policy version " + used[0]
	default:
		under = " under policy versions " + strings.Join(used, ", ")
	}
	sealedNote := ""
	if sealed > 0 {
		sealedNote = fmt.Sprintf(" and %d sealed (checked as recorded, not decided again)", sealed)
	}
	fmt.Fprintf(&out, "audit: %d executed effect(s), every one with provenance; %d decision(s) re-derived%s%s; ledger verified%s\n",
		len(effects), len(decisions)-sealed, sealedNote, under, signed)
	_, err = stdout.Write(out.Bytes())
	return err
}
