package config

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// The functions, named as their folders under functions/.
const (
	Invoke       = "invoke"
	Approve      = "approve"
	Resume       = "resume"
	Runs         = "runs"
	StreamReduce = "stream-reduce"
	Worker       = "worker"
	Sweeper      = "sweeper"
)

var (
	base  = []string{"TABLE_NAME", "LOG_LEVEL", "FIRM_CLAIM", "USER_CLAIM", "ROLES_CLAIM", "LEDGER_KEY"}
	brain = []string{"MODEL_ID", "DEFAULT_COST_CAP_USD", "MAX_COST_CAP_USD", "WARRANT_TTL", "MAX_TOKENS", "STEP_LIMIT", "BEDROCK_STREAMING", "PRICING_FILE"}
	queue = []string{"QUEUE_URL"}
	// policy: the functions that decide a call under the risk policy (the
	// worker), re-check it at dispatch (resume) or on counsel's edit
	// (approve).
	policy = []string{"TOOL_POLICY"}
	// catalog: the functions that build a brain over the tool catalog and
	// the agents (pkg/catalog).
	catalogVars = []string{"TOOL_CATALOG", "AGENTS"}
	// budget: the functions that hold firms to their monthly budget (the
	// worker) or show it (runs).
	budget = []string{"FIRM_MONTHLY_BUDGET_USD"}
	// desk: the function that serves the counsel's desk (runs) and tells
	// it how to sign counsel in.
	desk = []string{"DESK_CLIENT_ID", "DESK_AUTHORIZE_URL", "DESK_TOKEN_URL", "DESK_SCOPES"}
	// receipts: the functions that sign receipts (stream-reduce) or
	// checkpoints (the sweeper), or serve evidence (runs); and the prefix of
	// the origin the sweeper signs each checkpoint's note under, which runs
	// checks them under (the origin is the prefix, a slash and the firm id;
	// unset: warrant.example/firm).
	receipts = []string{"RECEIPT_KEY", "RECEIPT_RETIRED_KEYS", "CHECKPOINT_ORIGIN_PREFIX"}
	// checkpoints: where the sweeper keeps each checkpoint outside the
	// table (an S3 bucket; a directory on the local stack).
	checkpoints = []string{"CHECKPOINT_BUCKET", "CHECKPOINT_DIR"}
	// timestamps: the time-stamping authority the sweeper asks for an RFC
	// 3161 token over each latest checkpoint (its URL, and its certificate
	// or the CA that issued it, PEM); unset: no timestamps.
	timestamps = []string{"TIMESTAMP_AUTHORITY_URL", "TIMESTAMP_AUTHORITY_CERTIFICATE"}
	// witnesses: the witnesses the sweeper submits each latest checkpoint
	// to (a JSON array of {"url", "vkey"}: the witness's submission prefix,
	// https, and its cosignature verifier key); unset or empty: none.
	witnesses = []string{"WITNESSES"}
	// retention: the function that destroys content whose retention passed
	// (the sweeper). RETENTION_DAY is the local stack's short day (its
	// schedules run faster too); unset, a day is 24 hours, and only the
	// local stack (CHECKPOINT_DIR) may set it.
	retention = []string{"RETENTION_DAY"}
	// notify: the functions that publish notifications (stream-reduce, the
	// sweeper): the event bus, and the desk's URL for the events' links.
	notify = []string{"EVENT_BUS_NAME", "DESK_URL"}
	// data: the functions that read or write a run's content (issue 26):
	// DATA_KEY names the firm's key each run's data key is generated
	// (invoke) or opened (all of them) under (pkg/seal). Stream-reduce and
	// the sweeper never read content, so they are not told of the key.
	data = []string{"DATA_KEY"}
)

// FunctionVars is every environment variable each function reads.
var FunctionVars = map[string][]string{
	Invoke:       slices.Concat(base, brain, queue, catalogVars, data),
	Resume:       slices.Concat(base, brain, queue, policy, catalogVars, data),
	Worker:       slices.Concat(base, brain, queue, policy, budget, catalogVars, data),
	Approve:      slices.Concat(base, policy, catalogVars, data),
	Runs:         slices.Concat(base, budget, desk, receipts, data),
	StreamReduce: slices.Concat(base, receipts, notify),
	Sweeper:      slices.Concat(base, queue, catalogVars, receipts, checkpoints, timestamps, witnesses, notify, retention),
}

// Optional variables may be left unset in the template. DATA_KEY is among
// them until the functions seal content with it: the template always sets it
// for the functions that will (deploy/env_test.go holds it to FunctionVars).
var Optional = map[string]bool{"PRICING_FILE": true, "TOOL_POLICY": true, "TOOL_CATALOG": true, "AGENTS": true,
	"DESK_CLIENT_ID": true, "DESK_AUTHORIZE_URL": true, "DESK_TOKEN_URL": true, "DESK_SCOPES": true, "USER_CLAIM": true,
	"RECEIPT_RETIRED_KEYS": true, "CHECKPOINT_BUCKET": true, "CHECKPOINT_DIR": true, "CHECKPOINT_ORIGIN_PREFIX": true, "DATA_KEY": true,
	"RETENTION_DAY": true, "TIMESTAMP_AUTHORITY_URL": true, "TIMESTAMP_AUTHORITY_CERTIFICATE": true, "WITNESSES": true}

var deskScopes = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E ]{1,512}$`) // RFC 6749 scope-token characters

// originPrefix: what a signed note's origin may hold (c2sp.org/signed-note:
// no spaces, no plus), ASCII here, not ending in a slash.
var originPrefix = regexp.MustCompile(`^[\x21-\x2A\x2C-\x7E]{0,200}[\x21-\x2A\x2C-\x2E\x30-\x7E]$`)

// base64Line: one line of standard base64 (a DER certificate's).
var base64Line = regexp.MustCompile(`^[A-Za-z0-9+/]{16,}={0,2}$`)

var eventBusName = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,256}$`)

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Config is a function's validated configuration.
type Config struct {
	Function  string
	TableName string
	LogLevel  slog.Level
	FirmClaim string
	// UserClaim names the claim holding the user's id (USER_CLAIM, default
	// sub; Entra ID: oid): an opaque id, contracts.CheckUserID.
	UserClaim  string
	RolesClaim string
	// LedgerKey names the key that signs and verifies ledger heads:
	// "kms:<key ARN or alias>" on AWS, "hmac:<hex>" on the local stack
	// (pkg/anchor). It may hold key material, so it is never logged.
	LedgerKey string
	// ReceiptKey names the asymmetric key receipts and checkpoints are
	// signed with: "kms:<key ARN or alias>" (ECC_NIST_P256, SIGN_VERIFY) on
	// AWS, "p256:<hex PKCS#8>" on the local stack; RetiredReceiptKeys the
	// rotated-out keys whose receipts still verify ("kms:<key>" or
	// "spki:<base64 DER>", comma-separated). Never logged.
	ReceiptKey, RetiredReceiptKeys string
	// DataKey names the firm's key each run's data key is made and opened
	// under: "kms:<key ARN>" on AWS, "aes:<64 hex>" on the local stack
	// (pkg/seal.ParseKeySpec reads it fully; Load checks only its scheme).
	// Empty when unset. It may hold key material, so it is never logged.
	DataKey string
	// CheckpointBucket is the S3 bucket (Object Lock) the sweeper keeps
	// each checkpoint in, outside the table, and reads the last one back
	// from before it signs the next; CheckpointDir (the local stack only)
	// is a directory that stands in for it. The sweeper needs one of them.
	CheckpointBucket, CheckpointDir string
	// CheckpointOriginPrefix is the prefix of the origin each checkpoint's
	// signed note names (CHECKPOINT_ORIGIN_PREFIX; "": the default,
	// evidence.DefaultOriginPrefix): a schema-less URL-like name without
	// spaces, plus signs or a trailing slash.
	CheckpointOriginPrefix string
	// TimestampURL is the time-stamping authority's URL (https; http on
	// loopback only) and TimestampCert its certificate or its CA's (PEM, or
	// base64 DER on one line):
	// both set, or neither (no timestamps). pkg/timestamp parses the PEM.
	TimestampURL, TimestampCert string
	// Witnesses are the witnesses the sweeper submits each latest
	// checkpoint to (WITNESSES); their keys are read by the caller
	// (evidence.ParseWitnessKey).
	Witnesses []Witness
	// RetentionDay is how long a day of a retention lasts (the sweeper's):
	// 24 hours, or on the local stack only, RETENTION_DAY (at least 1s).
	RetentionDay time.Duration
	// EventBus is the EventBridge bus notifications go to, and DeskURL the
	// desk's base URL their links point into.
	EventBus, DeskURL string
	// QueueURL is the worker queue the functions that start, resume or
	// restart a run hand it to.
	QueueURL string
	// ToolPolicy names the risk policy document: empty for the embedded
	// policy, "file:<path>" (a file in the function's bundle, relative to
	// the executable) or "ssm:<parameter name>" (an SSM parameter). The
	// document is a whole policy or an overlay of the embedded one.
	ToolPolicy string
	// ToolCatalog and Agents name the tool catalog and the agents
	// documents the same way: empty for the embedded ones, "file:<path>" or
	// "ssm:/<parameter name>".
	ToolCatalog, Agents string
	// DeskClientID, DeskAuthorizeURL and DeskTokenURL are the OIDC app
	// client and the issuer's endpoints the counsel's desk signs in with
	// (authorization code + PKCE). All three set (https URLs) or none: the
	// desk then says sign-in is not configured.
	DeskClientID, DeskAuthorizeURL, DeskTokenURL string
	// DeskScopes are the scopes the desk asks the identity provider for
	// (DESK_SCOPES, default "openid email profile").
	DeskScopes string
	// FirmMonthlyBudgetUSD is the monthly model budget of a firm whose
	// settings name none (FIRM_MONTHLY_BUDGET_USD, a positive decimal
	// string); empty: no default, and such a firm's calls are refused
	// (firm_budget_exceeded). FirmMonthlyBudget is the same in nano-USD.
	FirmMonthlyBudgetUSD string
	FirmMonthlyBudget    pricing.Nano

	ModelID           string
	DefaultCostCapUSD string
	MaxCostCapUSD     string
	DefaultCostCap    pricing.Nano
	MaxCostCap        pricing.Nano
	WarrantTTL        time.Duration
	MaxTokens         int32
	StepLimit         int
	Streaming         bool
	Prices            *pricing.Table
}

// TableName reads TABLE_NAME, the one table every function and the reference
// tool server (cmd/toolserver) use, through lookup: required, trimmed.
func TableName(lookup func(string) (string, bool)) (string, error) {
	s, _ := lookup("TABLE_NAME")
	if s = strings.TrimSpace(s); s == "" {
		return "", failure.New(failure.KindConfigInvalid, "environment variable TABLE_NAME is required")
	}
	return s, nil
}

// Load reads function's variables through lookup (os.LookupEnv in main).
func Load(function string, lookup func(string) (string, bool)) (c Config, err error) {
	vars, ok := FunctionVars[function]
	if !ok {
		return Config{}, fmt.Errorf("config: unknown function %q", function)
	}
	undeclared := ""
	get := func(name, def string) string {
		for _, v := range vars {
			if v == name {
				if s, ok := lookup(name); ok && strings.TrimSpace(s) != "" {
					return strings.TrimSpace(s)
				}
				return def
			}
		}
		undeclared = name // a programming error: FunctionVars must list what a function reads
		return def
	}
	invalid := func(name, why string) error {
		return failure.New(failure.KindConfigInvalid, "environment variable "+name+" "+why)
	}
	c = Config{Function: function, FirmClaim: get("FIRM_CLAIM", "firm_id"), UserClaim: get("USER_CLAIM", "sub"), RolesClaim: get("ROLES_CLAIM", "roles")}
	if c.TableName, err = TableName(lookup); err != nil {
		return Config{}, err
	}
	if c.LedgerKey = get("LEDGER_KEY", ""); !strings.HasPrefix(c.LedgerKey, "kms:") && !strings.HasPrefix(c.LedgerKey, "hmac:") {
		return Config{}, invalid("LEDGER_KEY", `must be "kms:<key ARN or alias>" or, on the local stack only, "hmac:<hex>"`)
	}
	if slices.Contains(vars, "RECEIPT_KEY") {
		if c.ReceiptKey = get("RECEIPT_KEY", ""); !strings.HasPrefix(c.ReceiptKey, "kms:") && !strings.HasPrefix(c.ReceiptKey, "p256:") {
			return Config{}, invalid("RECEIPT_KEY", `must be "kms:<key ARN or alias>" or, on the local stack only, "p256:<hex>"`)
		}
		c.RetiredReceiptKeys = get("RECEIPT_RETIRED_KEYS", "")
	}
	if slices.Contains(vars, "DATA_KEY") {
		if c.DataKey = get("DATA_KEY", ""); c.DataKey != "" && !strings.HasPrefix(c.DataKey, "kms:") && !strings.HasPrefix(c.DataKey, "aes:") {
			return Config{}, invalid("DATA_KEY", `must be "kms:<key ARN>" or, on the local stack only, "aes:<64 hex digits>"`)
		}
	}
	if slices.Contains(vars, "EVENT_BUS_NAME") {
		if c.EventBus = get("EVENT_BUS_NAME", ""); !eventBusName.MatchString(c.EventBus) {
			return Config{}, invalid("EVENT_BUS_NAME", "must be an EventBridge bus name (letters, digits, . - _ /, at most 256)")
		}
		c.DeskURL = get("DESK_URL", "")
		if u, err := url.Parse(c.DeskURL); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
			(u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			return Config{}, invalid("DESK_URL", "must be the desk's https URL (http only on loopback), without query or fragment")
		}
	}
	if slices.Contains(vars, "CHECKPOINT_BUCKET") {
		c.CheckpointBucket, c.CheckpointDir = get("CHECKPOINT_BUCKET", ""), get("CHECKPOINT_DIR", "")
		switch {
		case c.CheckpointBucket != "" && c.CheckpointDir != "":
			return Config{}, invalid("CHECKPOINT_DIR", "must be empty when CHECKPOINT_BUCKET is set (it stands in for the bucket on the local stack)")
		case c.CheckpointBucket == "" && c.CheckpointDir == "":
			return Config{}, invalid("CHECKPOINT_BUCKET", "must name the bucket the sweeper keeps every checkpoint in, outside the table (or, on the local stack only, set CHECKPOINT_DIR)")
		case c.CheckpointDir != "" && !filepath.IsAbs(c.CheckpointDir):
			return Config{}, invalid("CHECKPOINT_DIR", "must be an absolute path")
		}
	}
	if slices.Contains(vars, "CHECKPOINT_ORIGIN_PREFIX") {
		c.CheckpointOriginPrefix = get("CHECKPOINT_ORIGIN_PREFIX", "")
		if p := c.CheckpointOriginPrefix; p != "" && !originPrefix.MatchString(p) {
			return Config{}, invalid("CHECKPOINT_ORIGIN_PREFIX", "must be a schema-less URL-like name (e.g. evidence.example.com/warrant): printable, no spaces, no plus, no trailing slash")
		}
	}
	if slices.Contains(vars, "TIMESTAMP_AUTHORITY_URL") {
		c.TimestampURL, c.TimestampCert = get("TIMESTAMP_AUTHORITY_URL", ""), get("TIMESTAMP_AUTHORITY_CERTIFICATE", "")
		u, err := url.Parse(c.TimestampURL)
		switch {
		case c.TimestampURL == "" && c.TimestampCert == "":
		case c.TimestampURL == "" || c.TimestampCert == "":
			return Config{}, invalid("TIMESTAMP_AUTHORITY_URL", "and TIMESTAMP_AUTHORITY_CERTIFICATE are set together, or neither")
		case err != nil || u.Host == "" || u.Fragment != "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))):
			// RFC 3161 over plain HTTP is sound (the token is signed), but
			// only the local stack's TSA on loopback goes without TLS.
			return Config{}, invalid("TIMESTAMP_AUTHORITY_URL", "must be the time-stamping authority's https URL (http only on loopback)")
		case !strings.Contains(c.TimestampCert, "-----BEGIN CERTIFICATE-----") && !base64Line.MatchString(c.TimestampCert):
			return Config{}, invalid("TIMESTAMP_AUTHORITY_CERTIFICATE", "must be the authority's certificate or its CA's: PEM, or the base64 of its DER on one line")
		}
	}
	if slices.Contains(vars, "WITNESSES") {
		ws, err := parseWitnesses(get("WITNESSES", ""))
		if err != nil {
			return Config{}, invalid("WITNESSES", err.Error())
		}
		c.Witnesses = ws
	}
	if slices.Contains(vars, "RETENTION_DAY") {
		c.RetentionDay = 24 * time.Hour
		if v := get("RETENTION_DAY", ""); v != "" {
			d, err := time.ParseDuration(v)
			switch {
			case err != nil || d < time.Second || d > 24*time.Hour:
				return Config{}, invalid("RETENTION_DAY", "must be a duration from 1s to 24h")
			case c.CheckpointDir == "":
				return Config{}, invalid("RETENTION_DAY", "is the local stack's short day (set with CHECKPOINT_DIR): on AWS a retention day is 24 hours")
			}
			c.RetentionDay = d
		}
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("LOG_LEVEL", "INFO"))); err != nil {
		return Config{}, invalid("LOG_LEVEL", "must be DEBUG, INFO, WARN or ERROR")
	}
	for _, src := range []struct {
		name, what string
		dst        *string
	}{{"TOOL_POLICY", "policy", &c.ToolPolicy}, {"TOOL_CATALOG", "catalog", &c.ToolCatalog}, {"AGENTS", "agents", &c.Agents}} {
		if !slices.Contains(vars, src.name) {
			continue
		}
		*src.dst = get(src.name, "")
		kind, where, _ := strings.Cut(*src.dst, ":")
		switch {
		case *src.dst == "":
		case kind == "file" && where != "":
		case kind == "ssm" && ssmName.MatchString(where):
		default:
			return Config{}, invalid(src.name, `must be empty (the embedded `+src.what+`), "file:<path>" or "ssm:/<parameter name>"`)
		}
	}
	if slices.Contains(vars, "DESK_CLIENT_ID") {
		c.DeskClientID, c.DeskAuthorizeURL, c.DeskTokenURL = get("DESK_CLIENT_ID", ""), get("DESK_AUTHORIZE_URL", ""), get("DESK_TOKEN_URL", "")
		set := 0
		for _, v := range []string{c.DeskClientID, c.DeskAuthorizeURL, c.DeskTokenURL} {
			if v != "" {
				set++
			}
		}
		if set != 0 && set != 3 {
			return Config{}, invalid("DESK_CLIENT_ID", "DESK_CLIENT_ID, DESK_AUTHORIZE_URL and DESK_TOKEN_URL are set together or not at all")
		}
		for name, v := range map[string]string{"DESK_AUTHORIZE_URL": c.DeskAuthorizeURL, "DESK_TOKEN_URL": c.DeskTokenURL} {
			if u, err := url.Parse(v); v != "" && (err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "") {
				return Config{}, invalid(name, "must be an https URL")
			}
		}
		c.DeskScopes = get("DESK_SCOPES", "openid email profile")
		scopes := strings.Fields(c.DeskScopes)
		if !slices.Contains(scopes, "openid") || strings.Join(scopes, " ") != c.DeskScopes || !deskScopes.MatchString(c.DeskScopes) {
			return Config{}, invalid("DESK_SCOPES", "must be OAuth scopes separated by single spaces, openid among them (e.g. \"openid email profile\"; Entra ID: \"openid email profile api://<app>/access\")")
		}
	}
	if slices.Contains(vars, "QUEUE_URL") {
		if c.QueueURL = get("QUEUE_URL", ""); c.QueueURL == "" {
			return Config{}, invalid("QUEUE_URL", "is required")
		}
	}
	if slices.Contains(vars, "FIRM_MONTHLY_BUDGET_USD") {
		if c.FirmMonthlyBudgetUSD = get("FIRM_MONTHLY_BUDGET_USD", ""); c.FirmMonthlyBudgetUSD != "" {
			if c.FirmMonthlyBudget, err = pricing.ParseUSD(c.FirmMonthlyBudgetUSD); err != nil || c.FirmMonthlyBudget <= 0 {
				return Config{}, invalid("FIRM_MONTHLY_BUDGET_USD", "must be a positive decimal string of dollars (unset: firms without a budget of their own can spend nothing)")
			}
		}
	}
	if !c.HasBrain() {
		return c, nil
	}
	defer func() {
		if undeclared != "" && err == nil {
			c, err = Config{}, fmt.Errorf("config: %s reads undeclared variable %s", function, undeclared)
		}
	}()
	c.ModelID = get("MODEL_ID", "")
	if c.ModelID == "" {
		return Config{}, invalid("MODEL_ID", "is required")
	}
	c.DefaultCostCapUSD, c.MaxCostCapUSD = get("DEFAULT_COST_CAP_USD", "1.00"), get("MAX_COST_CAP_USD", "10.00")
	if c.DefaultCostCap, err = pricing.ParseUSD(c.DefaultCostCapUSD); err != nil || c.DefaultCostCap <= 0 {
		return Config{}, invalid("DEFAULT_COST_CAP_USD", "must be a positive decimal string like 1.00")
	}
	if c.MaxCostCap, err = pricing.ParseUSD(c.MaxCostCapUSD); err != nil || c.MaxCostCap < c.DefaultCostCap {
		return Config{}, invalid("MAX_COST_CAP_USD", "must be a decimal string not below DEFAULT_COST_CAP_USD")
	}
	if c.WarrantTTL, err = time.ParseDuration(get("WARRANT_TTL", "24h")); err != nil || c.WarrantTTL < time.Minute || c.WarrantTTL > 30*24*time.Hour {
		return Config{}, invalid("WARRANT_TTL", "must be a Go duration between 1m and 720h")
	}
	maxTokens, err := strconv.Atoi(get("MAX_TOKENS", "1024"))
	if err != nil || maxTokens < 1 || maxTokens > 128000 {
		return Config{}, invalid("MAX_TOKENS", "must be an integer between 1 and 128000")
	}
	c.MaxTokens = int32(maxTokens)
	if c.StepLimit, err = strconv.Atoi(get("STEP_LIMIT", "12")); err != nil || c.StepLimit < 1 || c.StepLimit > 100 {
		return Config{}, invalid("STEP_LIMIT", "must be an integer between 1 and 100")
	}
	if c.Streaming, err = strconv.ParseBool(get("BEDROCK_STREAMING", "false")); err != nil {
		return Config{}, invalid("BEDROCK_STREAMING", "must be true or false")
	}
	if path := get("PRICING_FILE", ""); path != "" {
		c.Prices, err = pricing.LoadFile(path)
	} else {
		c.Prices, err = pricing.Embedded()
	}
	if err != nil {
		return Config{}, failure.Wrap(failure.KindConfigInvalid, "environment variable PRICING_FILE: the price table does not load", err)
	}
	if _, err := c.Prices.Price(c.ModelID); err != nil {
		return Config{}, failure.Wrap(failure.KindUnknownModel, "environment variable MODEL_ID: the model has no price, so runs could not be capped", err)
	}
	return c, nil
}

// ssmName is an SSM parameter name as TOOL_POLICY takes it: a path from the
// root (so its ARN is arn:...:parameter<name>).
var ssmName = regexp.MustCompile(`^(/[a-zA-Z0-9_.-]+){1,15}$`)

// HasBrain reports whether the function runs the brain (and so has a model,
// prices and the brain's limits configured).
func (c Config) HasBrain() bool {
	return c.Function == Invoke || c.Function == Resume || c.Function == Worker
}

// DefaultFirmBudget is FirmMonthlyBudget in nano-USD, nil when
// FIRM_MONTHLY_BUDGET_USD is unset (warrant.FirmSettings.MonthlyLimit).
func (c Config) DefaultFirmBudget() *int64 {
	if c.FirmMonthlyBudgetUSD == "" {
		return nil
	}
	n := int64(c.FirmMonthlyBudget)
	return &n
}

// CostCap resolves a run's cap: the default when the request names none, and
// never above the configured maximum.
func (c Config) CostCap(requested string) (string, error) {
	if requested == "" {
		return c.DefaultCostCapUSD, nil
	}
	n, err := pricing.ParseUSD(requested)
	if err != nil || n <= 0 {
		return "", failure.New(failure.KindInvalidRequest, "field cost_cap_usd: must be a positive decimal string like \"0.50\"")
	}
	if n > c.MaxCostCap {
		return "", failure.New(failure.KindInvalidRequest, "field cost_cap_usd: must not exceed "+c.MaxCostCapUSD)
	}
	return pricing.FormatUSD(n), nil
}

// Fatal logs a configuration failure as an envelope and exits; only main calls it.
func Fatal(function string, err error) {
	failure.NewLogger(os.Stdout).Log(context.Background(), failure.Build(err, failure.StageConfig, function, failure.Identity{}))
	os.Exit(1)
}

// Witness is a witness the sweeper submits checkpoints to: URL its
// submission prefix (POST URL/add-checkpoint), VKey its cosignature
// verifier key.
type Witness struct {
	URL  string `json:"url"`
	VKey string `json:"vkey"`
}

// MaxWitnesses bounds WITNESSES (each is asked in turn, each sweep).
const MaxWitnesses = 8

// parseWitnesses reads WITNESSES: empty, or a JSON array of witnesses.
func parseWitnesses(raw string) ([]Witness, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var ws []Witness
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ws); err != nil {
		return nil, fmt.Errorf(`must be a JSON array of {"url": ..., "vkey": ...}: %v`, err)
	}
	if len(ws) > MaxWitnesses {
		return nil, fmt.Errorf("names %d witnesses, at most %d", len(ws), MaxWitnesses)
	}
	seen := map[string]bool{}
	for i, w := range ws {
		u, err := url.Parse(w.URL)
		if err != nil || u.Host == "" || u.Fragment != "" || u.RawQuery != "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
			return nil, fmt.Errorf("[%d].url must be the witness's https submission prefix (http only on loopback)", i)
		}
		if w.VKey == "" || strings.ContainsAny(w.VKey, " \t\n") {
			return nil, fmt.Errorf("[%d].vkey must be the witness's cosignature verifier key (<name>+<hex id>+<base64>)", i)
		}
		if seen[w.VKey] {
			return nil, fmt.Errorf("[%d].vkey names a witness twice", i)
		}
		seen[w.VKey] = true
	}
	return ws, nil
}
