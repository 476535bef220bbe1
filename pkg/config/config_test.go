package config_test

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

var functions = []string{config.Invoke, config.Approve, config.Resume, config.Runs, config.StreamReduce, config.Worker, config.Sweeper}

// budgetFns read FIRM_MONTHLY_BUDGET_USD: the worker holds firms to it,
// runs shows it (GET /v1/budget).
var budgetFns = []string{config.Worker, config.Runs}

// contentFns read DATA_KEY: the functions that read or write a run's
// content (issue 26). Stream-reduce and the sweeper never do.
var contentFns = []string{config.Invoke, config.Approve, config.Resume, config.Runs, config.Worker}

func brainFn(fn string) bool {
	return fn == config.Invoke || fn == config.Resume || fn == config.Worker
}

// testLedgerKey is a local ledger key every function needs; lookup supplies
// it unless the test sets LEDGER_KEY itself.
const testQueueURL = "https://sqs.us-east-1.amazonaws.com/111122223333/warrant-worker"

const testLedgerKey = "hmac:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// testReceiptKey is a receipt key spec the receipt-signing and evidence
// functions need (config only checks its scheme); lookup supplies it too.
const testReceiptKey = "kms:arn:aws:kms:us-east-1:111122223333:key/5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		if !ok && k == "LEDGER_KEY" {
			return testLedgerKey, true
		}
		if !ok && k == "QUEUE_URL" {
			return testQueueURL, true
		}
		if !ok && k == "RECEIPT_KEY" {
			return testReceiptKey, true
		}
		if !ok && k == "EVENT_BUS_NAME" {
			return "warrant-notifications", true
		}
		if !ok && k == "DESK_URL" {
			return "https://api.warrant.example/desk", true
		}
		if _, dir := env["CHECKPOINT_DIR"]; !ok && !dir && k == "CHECKPOINT_BUCKET" {
			return "warrant-checkpoints", true
		}
		return v, ok
	}
}

func minimal(fn string) map[string]string {
	env := map[string]string{"TABLE_NAME": "warrant-dev"}
	if brainFn(fn) {
		env["MODEL_ID"] = model
	}
	return env
}

func kindOf(err error) failure.Kind {
	k, _, _ := failure.Classify(err)
	return k
}

func TestLoadDefaults(t *testing.T) {
	for _, fn := range functions {
		t.Run(fn, func(t *testing.T) {
			c, err := config.Load(fn, lookup(minimal(fn)))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Function != fn || c.TableName != "warrant-dev" || c.LogLevel != slog.LevelInfo || c.FirmClaim != "firm_id" || c.RolesClaim != "roles" {
				t.Errorf("base config %+v", c)
			}
			if !brainFn(fn) {
				if c.ModelID != "" || c.Prices != nil || c.MaxTokens != 0 {
					t.Errorf("%s loaded brain settings it does not read: %+v", fn, c)
				}
				return
			}
			if c.ModelID != model || c.DefaultCostCapUSD != "1.00" || c.MaxCostCapUSD != "10.00" ||
				c.DefaultCostCap != 1_000_000_000 || c.MaxCostCap != 10_000_000_000 || c.WarrantTTL != 24*time.Hour ||
				c.MaxTokens != 1024 || c.StepLimit != 12 || c.Streaming || c.Prices == nil {
				t.Errorf("brain defaults %+v", c)
			}
			if _, err := c.Prices.Price(model); err != nil {
				t.Errorf("default prices lack the model: %v", err)
			}
		})
	}
}

func TestLoadOverrides(t *testing.T) {
	env := map[string]string{
		"TABLE_NAME": "  warrant-prod  ", "LOG_LEVEL": "DEBUG", "FIRM_CLAIM": "custom:firm", "ROLES_CLAIM": "cognito:groups",
		"MODEL_ID": model, "DEFAULT_COST_CAP_USD": "0.50", "MAX_COST_CAP_USD": "0.50", "WARRANT_TTL": "1m",
		"MAX_TOKENS": "128000", "STEP_LIMIT": "100", "BEDROCK_STREAMING": "true",
	}
	c, err := config.Load(config.Resume, lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.TableName != "warrant-prod" || c.LogLevel != slog.LevelDebug || c.FirmClaim != "custom:firm" || c.RolesClaim != "cognito:groups" ||
		c.DefaultCostCap != 500_000_000 || c.MaxCostCap != 500_000_000 || c.WarrantTTL != time.Minute ||
		c.MaxTokens != 128000 || c.StepLimit != 100 || !c.Streaming {
		t.Errorf("overrides %+v", c)
	}
	// Blank means unset: the default applies.
	c, err = config.Load(config.Invoke, lookup(map[string]string{"TABLE_NAME": "t", "MODEL_ID": model, "MAX_TOKENS": "  ", "LOG_LEVEL": ""}))
	if err != nil || c.MaxTokens != 1024 || c.LogLevel != slog.LevelInfo {
		t.Errorf("blank values: %+v %v", c, err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		fns  []string // default: every function the variable applies to
		env  map[string]string
		want string // the variable the error names
		kind failure.Kind
	}{
		{name: "TABLE_NAME missing", fns: functions, env: map[string]string{"TABLE_NAME": ""}, want: "TABLE_NAME"},
		{name: "TABLE_NAME blank", fns: functions, env: map[string]string{"TABLE_NAME": "   "}, want: "TABLE_NAME"},
		{name: "LOG_LEVEL unknown", fns: functions, env: map[string]string{"LOG_LEVEL": "VERBOSE"}, want: "LOG_LEVEL"},
		{name: "LOG_LEVEL number", fns: functions, env: map[string]string{"LOG_LEVEL": "3"}, want: "LOG_LEVEL"},
		{name: "LEDGER_KEY missing", fns: functions, env: map[string]string{"LEDGER_KEY": ""}, want: "LEDGER_KEY"},
		{name: "LEDGER_KEY unknown scheme", fns: functions, env: map[string]string{"LEDGER_KEY": "aes:00"}, want: "LEDGER_KEY"},
		{name: "RECEIPT_KEY missing", fns: []string{config.Runs, config.StreamReduce, config.Sweeper}, env: map[string]string{"RECEIPT_KEY": ""}, want: "RECEIPT_KEY"},
		{name: "EVENT_BUS_NAME missing", fns: []string{config.StreamReduce, config.Sweeper}, env: map[string]string{"EVENT_BUS_NAME": ""}, want: "EVENT_BUS_NAME"},
		{name: "DESK_URL over http", fns: []string{config.StreamReduce, config.Sweeper}, env: map[string]string{"DESK_URL": "http://desk.example/desk"}, want: "DESK_URL"},
		{name: "DESK_URL with a fragment", fns: []string{config.StreamReduce, config.Sweeper}, env: map[string]string{"DESK_URL": "https://desk.example/desk#x"}, want: "DESK_URL"},
		{name: "RECEIPT_KEY an HMAC key", fns: []string{config.Runs, config.StreamReduce, config.Sweeper}, env: map[string]string{"RECEIPT_KEY": testLedgerKey}, want: "RECEIPT_KEY"},
		{name: "DATA_KEY an HMAC key", fns: contentFns, env: map[string]string{"DATA_KEY": testLedgerKey}, want: "DATA_KEY"},
		{name: "DATA_KEY a bare ARN", fns: contentFns, env: map[string]string{"DATA_KEY": "arn:aws:kms:us-east-1:111122223333:key/5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"}, want: "DATA_KEY"},
		{name: "QUEUE_URL missing", fns: []string{config.Invoke, config.Resume, config.Sweeper}, env: map[string]string{"QUEUE_URL": ""}, want: "QUEUE_URL"},
		{name: "MODEL_ID missing", env: map[string]string{"MODEL_ID": ""}, want: "MODEL_ID"},
		{name: "MODEL_ID unknown", env: map[string]string{"MODEL_ID": "anthropic.claude-9-v1:0"}, want: "MODEL_ID", kind: failure.KindUnknownModel},
		{name: "default cap not a number", env: map[string]string{"DEFAULT_COST_CAP_USD": "one"}, want: "DEFAULT_COST_CAP_USD"},
		{name: "default cap zero", env: map[string]string{"DEFAULT_COST_CAP_USD": "0.00"}, want: "DEFAULT_COST_CAP_USD"},
		{name: "default cap negative", env: map[string]string{"DEFAULT_COST_CAP_USD": "-1.00"}, want: "DEFAULT_COST_CAP_USD"},
		{name: "default cap with a dollar sign", env: map[string]string{"DEFAULT_COST_CAP_USD": "$1.00"}, want: "DEFAULT_COST_CAP_USD"},
		{name: "max cap not a number", env: map[string]string{"MAX_COST_CAP_USD": "ten"}, want: "MAX_COST_CAP_USD"},
		{name: "max cap exponent", env: map[string]string{"MAX_COST_CAP_USD": "1e3"}, want: "MAX_COST_CAP_USD"},
		{name: "default above max", env: map[string]string{"DEFAULT_COST_CAP_USD": "5.00", "MAX_COST_CAP_USD": "4.99"}, want: "MAX_COST_CAP_USD"},
		{name: "default above the default max", env: map[string]string{"DEFAULT_COST_CAP_USD": "10.01"}, want: "MAX_COST_CAP_USD"},
		{name: "TTL not a duration", env: map[string]string{"WARRANT_TTL": "1 day"}, want: "WARRANT_TTL"},
		{name: "TTL bare number", env: map[string]string{"WARRANT_TTL": "3600"}, want: "WARRANT_TTL"},
		{name: "TTL below 1m", env: map[string]string{"WARRANT_TTL": "59s"}, want: "WARRANT_TTL"},
		{name: "TTL above 720h", env: map[string]string{"WARRANT_TTL": "720h1s"}, want: "WARRANT_TTL"},
		{name: "TTL negative", env: map[string]string{"WARRANT_TTL": "-24h"}, want: "WARRANT_TTL"},
		{name: "MAX_TOKENS zero", env: map[string]string{"MAX_TOKENS": "0"}, want: "MAX_TOKENS"},
		{name: "MAX_TOKENS above 128000", env: map[string]string{"MAX_TOKENS": "128001"}, want: "MAX_TOKENS"},
		{name: "MAX_TOKENS not an integer", env: map[string]string{"MAX_TOKENS": "1k"}, want: "MAX_TOKENS"},
		{name: "MAX_TOKENS overflows int32", env: map[string]string{"MAX_TOKENS": "4294968320"}, want: "MAX_TOKENS"},
		{name: "STEP_LIMIT zero", env: map[string]string{"STEP_LIMIT": "0"}, want: "STEP_LIMIT"},
		{name: "STEP_LIMIT above 100", env: map[string]string{"STEP_LIMIT": "101"}, want: "STEP_LIMIT"},
		{name: "STEP_LIMIT fraction", env: map[string]string{"STEP_LIMIT": "1.5"}, want: "STEP_LIMIT"},
		{name: "BEDROCK_STREAMING yes", env: map[string]string{"BEDROCK_STREAMING": "yes"}, want: "BEDROCK_STREAMING"},
		{name: "BEDROCK_STREAMING on", env: map[string]string{"BEDROCK_STREAMING": "on"}, want: "BEDROCK_STREAMING"},
		{name: "PRICING_FILE missing", env: map[string]string{"PRICING_FILE": "/nonexistent/prices.json"}, want: "PRICING_FILE"},
		{name: "firm budget not a number", fns: budgetFns, env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": "lots"}, want: "FIRM_MONTHLY_BUDGET_USD"},
		{name: "firm budget zero", fns: budgetFns, env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": "0.00"}, want: "FIRM_MONTHLY_BUDGET_USD"},
		{name: "firm budget negative", fns: budgetFns, env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": "-100.00"}, want: "FIRM_MONTHLY_BUDGET_USD"},
		{name: "firm budget with a dollar sign", fns: budgetFns, env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": "$100"}, want: "FIRM_MONTHLY_BUDGET_USD"},
		{name: "firm budget with a comma", fns: budgetFns, env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": "1,000.00"}, want: "FIRM_MONTHLY_BUDGET_USD"},
	}
	for _, tc := range tests {
		fns := tc.fns
		if fns == nil {
			fns = []string{config.Invoke, config.Resume}
		}
		for _, fn := range fns {
			t.Run(fn+"/"+tc.name, func(t *testing.T) {
				env := minimal(fn)
				for k, v := range tc.env {
					env[k] = v
				}
				c, err := config.Load(fn, lookup(env))
				if err == nil {
					t.Fatalf("Load = %+v, want an error naming %s", c, tc.want)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q does not name %s", err, tc.want)
				}
				want := tc.kind
				if want == "" {
					want = failure.KindConfigInvalid
				}
				if k := kindOf(err); k != want {
					t.Errorf("kind %s, want %s (%v)", k, want, err)
				}
				if !reflectZero(c) {
					t.Errorf("a partial config came back with the error: %+v", c)
				}
				// The error names the variable, not its value.
				for k, v := range tc.env {
					if len(v) > 3 && k != "PRICING_FILE" && strings.Contains(err.Error(), v) {
						t.Errorf("error %q echoes the value of %s", err, k)
					}
				}
			})
		}
	}
}

func reflectZero(c config.Config) bool {
	return c.Function == "" && c.TableName == "" && c.ModelID == "" && c.Prices == nil && c.MaxTokens == 0
}

// TestLoadBrainVarsIgnoredElsewhere: the functions that do not run the
// brain do not read (so cannot fail on) its variables.
func TestLoadBrainVarsIgnoredElsewhere(t *testing.T) {
	for _, fn := range []string{config.Approve, config.Runs, config.StreamReduce} {
		env := minimal(fn)
		env["MODEL_ID"], env["MAX_TOKENS"], env["WARRANT_TTL"] = "no-such-model", "-1", "forever"
		if _, err := config.Load(fn, lookup(env)); err != nil {
			t.Errorf("%s: %v", fn, err)
		}
	}
}

// TestDataKey: the functions that read or write content read DATA_KEY (a
// kms: or, locally, an aes: key; unset until they seal with it), and
// stream-reduce and the sweeper never do, whatever it holds.
func TestDataKey(t *testing.T) {
	const kmsKey = "kms:arn:aws:kms:us-east-1:210987654321:key/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	const localKey = "aes:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	for _, fn := range functions {
		reads := slices.Contains(contentFns, fn)
		if slices.Contains(config.FunctionVars[fn], "DATA_KEY") != reads {
			t.Errorf("%s: FunctionVars lists DATA_KEY %v, want %v", fn, !reads, reads)
		}
		for _, v := range []string{kmsKey, localKey, ""} {
			env := minimal(fn)
			env["DATA_KEY"] = v
			c, err := config.Load(fn, lookup(env))
			if err != nil {
				t.Errorf("%s DATA_KEY=%q: %v", fn, v, err)
				continue
			}
			if want := map[bool]string{true: v}[reads]; c.DataKey != want {
				t.Errorf("%s DATA_KEY=%q: DataKey %q, want %q", fn, v, c.DataKey, want)
			}
		}
		if !reads {
			env := minimal(fn)
			env["DATA_KEY"] = "not a key"
			if _, err := config.Load(fn, lookup(env)); err != nil {
				t.Errorf("%s read DATA_KEY: %v", fn, err)
			}
		}
	}
}

func TestLoadUnknownFunction(t *testing.T) {
	if _, err := config.Load("billing", lookup(map[string]string{"TABLE_NAME": "t"})); err == nil {
		t.Fatal("Load of an unknown function succeeded")
	}
}

func TestLoadPricingFile(t *testing.T) {
	dir := t.TempDir()
	custom := filepath.Join(dir, "prices.json")
	const file = `{
  "version": "2026-12-02-test",
  "currency": "USD",
  "unit": "per_million_tokens",
  "models": {
    "example.custom-model-v1:0": {"input": "1.00", "output": "2.00", "source": "https://example.test/prices", "as_of": "2026-12-01"}
  }
}`
	if err := os.WriteFile(custom, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Invoke, lookup(map[string]string{"TABLE_NAME": "t", "MODEL_ID": "example.custom-model-v1:0", "PRICING_FILE": custom}))
	if err != nil {
		t.Fatalf("Load with PRICING_FILE: %v", err)
	}
	if c.Prices.Version() != "2026-12-02-test" {
		t.Errorf("prices version %q: the file did not replace the embedded table", c.Prices.Version())
	}
	// The file replaces the table: the default model is no longer priced.
	_, err = config.Load(config.Invoke, lookup(map[string]string{"TABLE_NAME": "t", "MODEL_ID": model, "PRICING_FILE": custom}))
	if kindOf(err) != failure.KindUnknownModel {
		t.Errorf("default model under a file without it: %v, want unknown_model", err)
	}
	// A file that is not a price table.
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"models":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = config.Load(config.Resume, lookup(map[string]string{"TABLE_NAME": "t", "MODEL_ID": model, "PRICING_FILE": broken}))
	if err == nil || kindOf(err) != failure.KindConfigInvalid || !strings.Contains(err.Error(), "PRICING_FILE") {
		t.Errorf("broken PRICING_FILE: %v", err)
	}
}

// TestFunctionVarsAreWhatLoadReads: Load looks up exactly the variables
// FunctionVars lists for the function, and nothing else, so the template
// test that holds template.yaml to FunctionVars covers every variable.
func TestFunctionVarsAreWhatLoadReads(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.json")
	data, err := os.ReadFile(filepath.Join("..", "pricing", "bedrock_prices.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prices, data, 0o600); err != nil {
		t.Fatal(err)
	}
	full := map[string]string{
		"TABLE_NAME": "t", "LOG_LEVEL": "WARN", "FIRM_CLAIM": "firm_id", "USER_CLAIM": "oid", "ROLES_CLAIM": "roles", "LEDGER_KEY": testLedgerKey, "QUEUE_URL": testQueueURL,
		"RECEIPT_KEY": testReceiptKey, "RECEIPT_RETIRED_KEYS": "spki:MFkw", "CHECKPOINT_BUCKET": "warrant-checkpoints", "CHECKPOINT_DIR": "", "CHECKPOINT_ORIGIN_PREFIX": "evidence.example.com/warrant", "RETENTION_DAY": "",
		"TIMESTAMP_AUTHORITY_URL": "https://tsa.example.com/", "TIMESTAMP_AUTHORITY_CERTIFICATE": testTSACert, "WITNESSES": "",
		"EVENT_BUS_NAME": "warrant-prod-notifications", "DESK_URL": "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/desk",
		"MODEL_ID": model, "DEFAULT_COST_CAP_USD": "1.00", "MAX_COST_CAP_USD": "10.00", "WARRANT_TTL": "24h",
		"MAX_TOKENS": "1024", "STEP_LIMIT": "12", "BEDROCK_STREAMING": "false", "PRICING_FILE": prices,
		"DATA_KEY":                "kms:arn:aws:kms:us-east-1:111122223333:key/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
		"TOOL_POLICY":             "ssm:/warrant/prod/tool-policy",
		"TOOL_CATALOG":            "ssm:/warrant/prod/tool-catalog",
		"AGENTS":                  "file:agents.json",
		"FIRM_MONTHLY_BUDGET_USD": "250.00",
		"DESK_CLIENT_ID":          "4k1dmn2b3c4d5e6f7g8h9i0j1k",
		"DESK_AUTHORIZE_URL":      "https://warrant-prod.auth.us-east-1.amazoncognito.com/oauth2/authorize",
		"DESK_TOKEN_URL":          "https://warrant-prod.auth.us-east-1.amazoncognito.com/oauth2/token",
		"DESK_SCOPES":             "openid email profile",
	}
	if len(config.FunctionVars) != len(functions) {
		t.Errorf("FunctionVars has %d functions, want %d", len(config.FunctionVars), len(functions))
	}
	for _, fn := range functions {
		t.Run(fn, func(t *testing.T) {
			vars := config.FunctionVars[fn]
			if len(vars) == 0 {
				t.Fatalf("FunctionVars lists nothing for %s", fn)
			}
			var read []string
			strict := func(name string) (string, bool) {
				if !slices.Contains(vars, name) {
					t.Errorf("Load(%s) reads %s, which FunctionVars does not list", fn, name)
				}
				if strings.HasPrefix(name, "AWS_") {
					t.Errorf("Load(%s) reads the SDK's own variable %s", fn, name)
				}
				read = append(read, name)
				v, ok := full[name]
				return v, ok
			}
			if _, err := config.Load(fn, strict); err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, v := range vars {
				if !slices.Contains(read, v) {
					t.Errorf("FunctionVars lists %s for %s, but Load never reads it", v, fn)
				}
				if _, ok := full[v]; !ok {
					t.Errorf("this test does not know %s; add it to the full environment", v)
				}
			}
			seen := map[string]bool{}
			for _, v := range vars {
				if seen[v] {
					t.Errorf("FunctionVars lists %s twice for %s", v, fn)
				}
				seen[v] = true
			}
			// Every non-optional variable is needed for Load to succeed or
			// has a default; the optional ones are marked.
			for v := range config.Optional {
				readBy := false
				for _, vs := range config.FunctionVars {
					readBy = readBy || slices.Contains(vs, v)
				}
				if !readBy {
					t.Errorf("optional variable %s is read by no function", v)
				}
			}
		})
	}
	// FunctionVars slices do not alias: appending to one function's list
	// must not change another's.
	inv, res := config.FunctionVars[config.Invoke], config.FunctionVars[config.Resume]
	if &inv[0] == &res[0] {
		t.Error("invoke and resume share one backing array")
	}
}

func TestCostCap(t *testing.T) {
	c, err := config.Load(config.Invoke, lookup(map[string]string{"TABLE_NAME": "t", "MODEL_ID": model,
		"DEFAULT_COST_CAP_USD": "0.75", "MAX_COST_CAP_USD": "5.00"}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "0.75", true},
		{"0.50", "0.50", true},
		{"5.00", "5.00", true},
		{"5", "", true}, // a whole number is accepted; want is checked as a decimal below
		{"0.000000001", "", true},
		{"5.000000001", "", false},
		{"5.01", "", false},
		{"100", "", false},
		{"0", "", false},
		{"0.00", "", false},
		{"-1", "", false},
		{"1e1", "", false},
		{" 1.00", "", false},
		{"1,00", "", false},
		{"$1", "", false},
		{"01.00", "", false},
		{"1.0000000001", "", false},
	}
	for _, tc := range tests {
		got, err := c.CostCap(tc.in)
		if !tc.ok {
			if err == nil {
				t.Errorf("CostCap(%q) = %q, want an error", tc.in, got)
			} else if kindOf(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), "cost_cap_usd") {
				t.Errorf("CostCap(%q): %v, want invalid_request naming cost_cap_usd", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("CostCap(%q): %v", tc.in, err)
			continue
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("CostCap(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Whatever the spelling, the result is a decimal the pricing
		// package reads back to the same amount.
		gn, err1 := pricing.ParseUSD(got)
		in := tc.in
		if in == "" {
			in = c.DefaultCostCapUSD
		}
		wn, err2 := pricing.ParseUSD(in)
		if err1 != nil || err2 != nil || gn != wn {
			t.Errorf("CostCap(%q) = %q, not the same amount", tc.in, got)
		}
	}
	// The limit error names the configured maximum, not the request.
	if _, err := c.CostCap("99.99"); err == nil || !strings.Contains(err.Error(), "5.00") || strings.Contains(err.Error(), "99.99") {
		t.Errorf("CostCap above max: %v", err)
	}
}

// TestFirmMonthlyBudget: the worker and runs read the deployment's default
// firm budget; unset it is no default (nil), never unlimited; the others
// do not read it.
func TestFirmMonthlyBudget(t *testing.T) {
	for _, fn := range functions {
		env := minimal(fn)
		env["FIRM_MONTHLY_BUDGET_USD"] = "  250.50 "
		c, err := config.Load(fn, lookup(env))
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		d := c.DefaultFirmBudget()
		if !slices.Contains(budgetFns, fn) {
			if d != nil || c.FirmMonthlyBudgetUSD != "" {
				t.Errorf("%s read FIRM_MONTHLY_BUDGET_USD: %+v", fn, c)
			}
			continue
		}
		if d == nil || *d != 250_500_000_000 || c.FirmMonthlyBudgetUSD != "250.50" || c.FirmMonthlyBudget != 250_500_000_000 {
			t.Errorf("%s: default firm budget %v (%+v)", fn, d, c)
		}
		c, err = config.Load(fn, lookup(minimal(fn)))
		if err != nil || c.DefaultFirmBudget() != nil {
			t.Errorf("%s unset: %v %v", fn, c.DefaultFirmBudget(), err)
		}
	}
}

func TestLoadErrorIsFailureError(t *testing.T) {
	_, err := config.Load(config.Runs, lookup(map[string]string{}))
	var fe *failure.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Load error %T is not a *failure.Error: config.Fatal could not classify it", err)
	}
}

// TestToolPolicy: TOOL_POLICY, TOOL_CATALOG and AGENTS each name the
// embedded document (empty), a file in the bundle or an SSM parameter;
// anything else fails the function's init.
func TestToolPolicy(t *testing.T) {
	for _, name := range []string{"TOOL_POLICY", "TOOL_CATALOG", "AGENTS"} {
		env := func(v string) func(string) (string, bool) {
			return func(k string) (string, bool) {
				m := map[string]string{"TABLE_NAME": "t", "LEDGER_KEY": testLedgerKey, name: v}
				s, ok := m[k]
				return s, ok
			}
		}
		got := func(c config.Config) string {
			return map[string]string{"TOOL_POLICY": c.ToolPolicy, "TOOL_CATALOG": c.ToolCatalog, "AGENTS": c.Agents}[name]
		}
		for _, ok := range []string{"", "file:policy.json", "ssm:/warrant/prod/tool-policy", "ssm:/p"} {
			c, err := config.Load(config.Approve, env(ok))
			if err != nil || got(c) != ok {
				t.Errorf("%s=%q: %+v %v", name, ok, got(c), err)
			}
		}
		for _, bad := range []string{"policy.json", "file:", "ssm:warrant/policy", "ssm:/", "s3://bucket/policy.json", "ssm:/a b"} {
			if _, err := config.Load(config.Approve, env(bad)); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v, want an error naming it", name, bad, err)
			}
		}
	}
}

// The desk's sign-in is all or nothing, over https only.
func TestDeskSignIn(t *testing.T) {
	base := map[string]string{"TABLE_NAME": "t", "LEDGER_KEY": testLedgerKey, "RECEIPT_KEY": testReceiptKey}
	load := func(extra map[string]string) (config.Config, error) {
		env := maps.Clone(base)
		maps.Copy(env, extra)
		return config.Load(config.Runs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	}
	if c, err := load(nil); err != nil || c.DeskClientID != "" {
		t.Fatalf("none set: %+v %v", c, err)
	}
	full := map[string]string{"DESK_CLIENT_ID": "abc", "DESK_AUTHORIZE_URL": "https://id.example/authorize", "DESK_TOKEN_URL": "https://id.example/token"}
	if c, err := load(full); err != nil || c.DeskTokenURL != full["DESK_TOKEN_URL"] {
		t.Fatalf("all set: %+v %v", c, err)
	}
	for name, extra := range map[string]map[string]string{
		"DESK_CLIENT_ID":     {"DESK_CLIENT_ID": "abc"},
		"DESK_AUTHORIZE_URL": {"DESK_CLIENT_ID": "abc", "DESK_AUTHORIZE_URL": "http://id.example/authorize", "DESK_TOKEN_URL": "https://id.example/token"},
		"DESK_TOKEN_URL":     {"DESK_CLIENT_ID": "abc", "DESK_AUTHORIZE_URL": "https://id.example/authorize", "DESK_TOKEN_URL": "https://user@id.example/token"},
	} {
		if _, err := load(extra); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: err = %v, want one naming %s", extra, err, name)
		}
	}
}

// TestCheckpointStore (issue 25 C): the sweeper keeps every checkpoint
// outside the table, in the bucket or (the local stack) a directory, never
// both and never neither.
func TestCheckpointStore(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		env        map[string]string
		bucket, at string
		want       string // the variable the error names; "" ok
	}{
		{map[string]string{"CHECKPOINT_BUCKET": "warrant-checkpoints"}, "warrant-checkpoints", "", ""},
		{map[string]string{"CHECKPOINT_DIR": dir}, "", dir, ""},
		{map[string]string{"CHECKPOINT_BUCKET": "", "CHECKPOINT_DIR": " "}, "", "", "CHECKPOINT_BUCKET"},
		{map[string]string{"CHECKPOINT_BUCKET": "warrant-checkpoints", "CHECKPOINT_DIR": dir}, "", "", "CHECKPOINT_DIR"},
		{map[string]string{"CHECKPOINT_DIR": "relative/checkpoints"}, "", "", "CHECKPOINT_DIR"},
	} {
		env := minimal(config.Sweeper)
		maps.Copy(env, tc.env)
		c, err := config.Load(config.Sweeper, lookup(env))
		switch {
		case tc.want == "" && (err != nil || c.CheckpointBucket != tc.bucket || c.CheckpointDir != tc.at):
			t.Errorf("%v: %+v %v", tc.env, c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || kindOf(err) != failure.KindConfigInvalid):
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

// TestCheckpointOriginPrefix (issue 30 item 1): the prefix of the origin a
// checkpoint's note names is optional (the default is evidence's), and when
// set is a name a signed note can carry: no spaces or plus, no trailing slash.
func TestCheckpointOriginPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"", true}, {"evidence.example.com/warrant", true}, {"a", true},
		{"evidence.example.com/warrant/", false}, {"a b", false}, {"a+b", false}, {"a\tb", false}, {"é.example", false},
	} {
		env := minimal(config.Sweeper)
		env["CHECKPOINT_BUCKET"], env["CHECKPOINT_ORIGIN_PREFIX"] = "warrant-checkpoints", tc.prefix
		c, err := config.Load(config.Sweeper, lookup(env))
		switch {
		case tc.ok && (err != nil || c.CheckpointOriginPrefix != tc.prefix):
			t.Errorf("%q: %+v %v", tc.prefix, c.CheckpointOriginPrefix, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "CHECKPOINT_ORIGIN_PREFIX")):
			t.Errorf("%q: %v, want an error naming CHECKPOINT_ORIGIN_PREFIX", tc.prefix, err)
		}
	}
}

const testTSACert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestTimestampAuthority (issue 30 item 3): the sweeper's TSA is optional,
// its URL and certificate set together; https, or http on loopback only.
func TestTimestampAuthority(t *testing.T) {
	for _, tc := range []struct {
		url, cert, want string
	}{
		{"", "", ""}, {"https://tsa.example.com/tsr", testTSACert, ""}, {"http://127.0.0.1:3180/", testTSACert, ""},
		{"https://tsa.example.com/", "", "TIMESTAMP_AUTHORITY_URL"}, {"", testTSACert, "TIMESTAMP_AUTHORITY_URL"},
		{"http://tsa.example.com/", testTSACert, "TIMESTAMP_AUTHORITY_URL"}, {"tsa.example.com", testTSACert, "TIMESTAMP_AUTHORITY_URL"},
		{"https://tsa.example.com/", "MIIBkTCCATegAwIBAgIBATAKBggqhkjOPQQDAjA=", ""},
		{"https://tsa.example.com/", "MIIB", "TIMESTAMP_AUTHORITY_CERTIFICATE"},
		{"https://tsa.example.com/", "not a certificate at all", "TIMESTAMP_AUTHORITY_CERTIFICATE"},
	} {
		env := minimal(config.Sweeper)
		env["CHECKPOINT_BUCKET"], env["TIMESTAMP_AUTHORITY_URL"], env["TIMESTAMP_AUTHORITY_CERTIFICATE"] = "warrant-checkpoints", tc.url, tc.cert
		c, err := config.Load(config.Sweeper, lookup(env))
		switch {
		case tc.want == "" && (err != nil || c.TimestampURL != tc.url || c.TimestampCert != strings.TrimSpace(tc.cert)):
			t.Errorf("%q: %+v %v", tc.url, c.TimestampURL, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q %q: %v, want an error naming %s", tc.url, tc.cert, err, tc.want)
		}
	}
}

// TestWitnesses (issue 30 item 4): the sweeper's witnesses are optional, a
// JSON array of {"url", "vkey"}, each https (http on loopback), at most
// MaxWitnesses, none twice; a bad one is refused naming its member.
func TestWitnesses(t *testing.T) {
	const vkey = "witness.example/w1+5c16c451+BFt7AI/cyY6r0iBbyfOmDdcMfFgcAWWV5HM+GiYPK5sf"
	many := "["
	for i := range config.MaxWitnesses + 1 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`{"url":"https://w%d.example/","vkey":"w%d+1+AA"}`, i, i)
	}
	many += "]"
	for _, tc := range []struct {
		raw  string
		n    int
		want string // what the error names; "" ok
	}{
		{"", 0, ""}, {"[]", 0, ""},
		{`[{"url":"https://witness.example/w1","vkey":"` + vkey + `"}]`, 1, ""},
		{`[{"url":"http://127.0.0.1:8090","vkey":"` + vkey + `"}]`, 1, ""},
		{`{"url":"https://witness.example/"}`, 0, "JSON array"},
		{`[{"url":"https://witness.example/","vkey":"` + vkey + `","name":"x"}]`, 0, "JSON array"},
		{`[{"url":"http://witness.example/","vkey":"` + vkey + `"}]`, 0, "[0].url"},
		{`[{"url":"https://witness.example/?a=b","vkey":"` + vkey + `"}]`, 0, "[0].url"},
		{`[{"url":"https://witness.example/","vkey":""}]`, 0, "[0].vkey"},
		{`[{"url":"https://a.example/","vkey":"` + vkey + `"},{"url":"https://b.example/","vkey":"` + vkey + `"}]`, 0, "[1].vkey names a witness twice"},
		{many, 0, "at most 8"},
	} {
		env := minimal(config.Sweeper)
		env["CHECKPOINT_BUCKET"], env["WITNESSES"] = "warrant-checkpoints", tc.raw
		c, err := config.Load(config.Sweeper, lookup(env))
		switch {
		case tc.want == "" && (err != nil || len(c.Witnesses) != tc.n):
			t.Errorf("%s: %+v %v", tc.raw, c.Witnesses, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "WITNESSES") || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming WITNESSES and %s", tc.raw, err, tc.want)
		}
	}
}

// TestRetentionDay (issue 26): a retention day is 24 hours; only the local
// stack (CHECKPOINT_DIR) may shorten it, to 1s at least.
func TestRetentionDay(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		day  time.Duration
		want string // the variable the error names; "" ok
	}{
		{map[string]string{"CHECKPOINT_BUCKET": "warrant-checkpoints"}, 24 * time.Hour, ""},
		{map[string]string{"CHECKPOINT_DIR": dir, "RETENTION_DAY": "2s"}, 2 * time.Second, ""},
		{map[string]string{"CHECKPOINT_BUCKET": "warrant-checkpoints", "RETENTION_DAY": "2s"}, 0, "RETENTION_DAY"},
		{map[string]string{"CHECKPOINT_DIR": dir, "RETENTION_DAY": "500ms"}, 0, "RETENTION_DAY"},
		{map[string]string{"CHECKPOINT_DIR": dir, "RETENTION_DAY": "2 days"}, 0, "RETENTION_DAY"},
		{map[string]string{"CHECKPOINT_DIR": dir, "RETENTION_DAY": "25h"}, 0, "RETENTION_DAY"},
	} {
		env := minimal(config.Sweeper)
		maps.Copy(env, tc.env)
		c, err := config.Load(config.Sweeper, lookup(env))
		switch {
		case tc.want == "" && (err != nil || c.RetentionDay != tc.day):
			t.Errorf("%v: %v %v", tc.env, c.RetentionDay, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || kindOf(err) != failure.KindConfigInvalid):
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}

// TestIdentityProviderClaims (issue 27 item 12): the user claim and the
// desk's scopes are the deployment's; scopes without openid, or not
// space-separated scope tokens, are refused naming DESK_SCOPES.
func TestIdentityProviderClaims(t *testing.T) {
	for _, tc := range []struct {
		env         map[string]string
		user, scope string
		want        string // the variable the error names; "" ok
	}{
		{map[string]string{}, "sub", "openid email profile", ""},
		{map[string]string{"USER_CLAIM": "oid", "DESK_SCOPES": "openid email profile api://warrant/access"}, "oid",
			"openid email profile api://warrant/access", ""},
		{map[string]string{"DESK_SCOPES": "email profile"}, "", "", "DESK_SCOPES"},
		{map[string]string{"DESK_SCOPES": "openid  email"}, "", "", "DESK_SCOPES"},
		{map[string]string{"DESK_SCOPES": "openid \"email\""}, "", "", "DESK_SCOPES"},
	} {
		env := minimal(config.Runs)
		maps.Copy(env, tc.env)
		c, err := config.Load(config.Runs, lookup(env))
		switch {
		case tc.want == "" && (err != nil || c.UserClaim != tc.user || c.DeskScopes != tc.scope):
			t.Errorf("%v: user claim %q, scopes %q, %v", tc.env, c.UserClaim, c.DeskScopes, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
}
