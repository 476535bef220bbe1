package pricing_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

const (
	sonnet45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	haiku45  = "anthropic.claude-haiku-4-5-20251001-v1:0"
	opus45   = "anthropic.claude-opus-4-5-20251101-v1:0"
	sonnet4  = "anthropic.claude-sonnet-4-20250514-v1:0"
	opus41   = "anthropic.claude-opus-4-1-20250805-v1:0"
	haiku35  = "anthropic.claude-3-5-haiku-20241022-v1:0"
	novaMic  = "amazon.nova-micro-v1:0"
	novaLite = "amazon.nova-lite-v1:0"
	novaPro  = "amazon.nova-pro-v1:0"
	novaPrem = "amazon.nova-premier-v1:0"
	llama33  = "meta.llama3-3-70b-instruct-v1:0"
)

// preGlobalDiscount lists the models older than the 4.5 generation that have
// a global profile; for them global costs the same as every other id.
var preGlobalDiscount = map[string]bool{sonnet4: true}

func embedded(t *testing.T) *pricing.Table {
	t.Helper()
	tbl, err := pricing.Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	return tbl
}

func mustPrice(t *testing.T, tbl *pricing.Table, model string) pricing.Price {
	t.Helper()
	p, err := tbl.Price(model)
	if err != nil {
		t.Fatalf("Price(%q): %v", model, err)
	}
	return p
}

func TestEmbeddedHasRequiredModels(t *testing.T) {
	tbl := embedded(t)
	if tbl.Version() != "2026-12-01" {
		t.Errorf("Version = %q", tbl.Version())
	}
	required := []string{
		sonnet4, sonnet45, haiku45, opus41, opus45, haiku35, novaMic, novaLite, novaPro, novaPrem, llama33,
		"us." + sonnet4, "eu." + sonnet4, "apac." + sonnet4, "global." + sonnet4,
		"us." + sonnet45, "eu." + sonnet45, "apac." + sonnet45, "global." + sonnet45,
		"us." + haiku45, "eu." + haiku45, "apac." + haiku45, "global." + haiku45,
		"us." + opus45, "eu." + opus45, "global." + opus45,
		"us." + opus41, "us." + haiku35,
		"us." + novaMic, "eu." + novaMic, "apac." + novaMic,
		"us." + novaLite, "us." + novaPro, "us." + novaPrem, "us." + llama33,
	}
	for _, id := range required {
		p := mustPrice(t, tbl, id)
		if p.Model != id || p.Source == "" || p.AsOf == "" {
			t.Errorf("%s: incomplete price %+v", id, p)
		}
	}
}

func TestEmbeddedListPrices(t *testing.T) {
	tbl := embedded(t)
	const M = pricing.Nano(1_000_000) // 1e6 nano = $0.001; prices below are nano-USD per million tokens
	tests := []struct {
		model                         string
		input, output, cacheR, cacheW pricing.Nano
	}{
		{"global." + sonnet45, 3_000 * M, 15_000 * M, 300 * M, 3_750 * M},
		{"us." + sonnet45, 3_300 * M, 16_500 * M, 330 * M, 4_125 * M},
		{sonnet45, 3_300 * M, 16_500 * M, 330 * M, 4_125 * M},
		{"global." + haiku45, 1_000 * M, 5_000 * M, 100 * M, 1_250 * M},
		{"eu." + haiku45, 1_100 * M, 5_500 * M, 110 * M, 1_375 * M},
		{"global." + opus45, 5_000 * M, 25_000 * M, 500 * M, 6_250 * M},
		{"us." + opus45, 5_500 * M, 27_500 * M, 550 * M, 6_875 * M},
		{sonnet4, 3_000 * M, 15_000 * M, 300 * M, 3_750 * M},
		{opus41, 15_000 * M, 75_000 * M, 1_500 * M, 18_750 * M},
		{haiku35, 800 * M, 4_000 * M, 80 * M, 1_000 * M},
		{novaMic, 35 * M, 140 * M, 8_750_000, 35 * M},
		{novaPrem, 2_500 * M, 12_500 * M, 625 * M, 2_500 * M},
	}
	for _, tc := range tests {
		p := mustPrice(t, tbl, tc.model)
		if p.Input != tc.input || p.Output != tc.output || p.CacheRead != tc.cacheR || p.CacheWrite != tc.cacheW ||
			!p.CacheReadSupported || !p.CacheWriteSupported {
			t.Errorf("%s: got %+v", tc.model, p)
		}
	}
	llama := mustPrice(t, tbl, llama33)
	if llama.Input != 720*M || llama.Output != 720*M || llama.CacheReadSupported || llama.CacheWriteSupported {
		t.Errorf("llama: got %+v", llama)
	}
}

func TestGeographicProfilesCostTenPercentMoreThanGlobal(t *testing.T) {
	tbl := embedded(t)
	checked45 := 0
	for _, id := range tbl.Models() {
		base, ok := strings.CutPrefix(id, "global.")
		if !ok {
			continue
		}
		if _, err := tbl.Price("us." + base); err != nil {
			continue
		}
		global, us := mustPrice(t, tbl, id), mustPrice(t, tbl, "us."+base)
		type pair struct {
			name   string
			g, geo pricing.Nano
		}
		parts := []pair{
			{"input", global.Input, us.Input},
			{"output", global.Output, us.Output},
			{"cache_read", global.CacheRead, us.CacheRead},
			{"cache_write", global.CacheWrite, us.CacheWrite},
		}
		for _, p := range parts {
			if preGlobalDiscount[base] {
				if p.geo != p.g {
					t.Errorf("%s %s: us %s != global %s for a pre-4.5 model", base, p.name, p.geo, p.g)
				}
				continue
			}
			// Integer comparison: 1.1 × global exactly, with no float rounding.
			if p.geo*10 != p.g*11 {
				t.Errorf("%s %s: us %s is not 1.1 × global %s", base, p.name, p.geo, p.g)
			}
		}
		if !preGlobalDiscount[base] {
			checked45++
		}
	}
	if checked45 < 3 {
		t.Errorf("only %d 4.5-generation global/us pairs checked; want Sonnet, Haiku and Opus 4.5", checked45)
	}
}

// Every geographic profile and the bare in-region id share one price; only
// global may differ.
func TestGeographicProfilesShareOnePrice(t *testing.T) {
	tbl := embedded(t)
	for _, id := range tbl.Models() {
		prefix, base, _ := strings.Cut(id, ".")
		if prefix != "us" && prefix != "eu" && prefix != "apac" {
			continue
		}
		want := mustPrice(t, tbl, id)
		for _, other := range []string{base, "us." + base, "eu." + base, "apac." + base} {
			got, err := tbl.Price(other)
			if err != nil {
				continue
			}
			if got.Input != want.Input || got.Output != want.Output || got.CacheRead != want.CacheRead ||
				got.CacheWrite != want.CacheWrite || got.CacheReadSupported != want.CacheReadSupported ||
				got.CacheWriteSupported != want.CacheWriteSupported {
				t.Errorf("%s and %s differ: %+v vs %+v", id, other, want, got)
			}
		}
	}
}

func TestTokenCost(t *testing.T) {
	tests := []struct {
		name  string
		model string
		u     contracts.Usage
		want  pricing.Nano
	}{
		// Nothing used costs nothing.
		{"zero usage", sonnet45, contracts.Usage{}, 0},
		// 1000 × 3_000_000_000 + 500 × 15_000_000_000 = 10.5e12; / 1e6 = 10_500_000 ($0.0105).
		{"sonnet 4.5 global", "global." + sonnet45, contracts.Usage{InputTokens: 1000, OutputTokens: 500}, 10_500_000},
		// 1000 × 3_300_000_000 + 500 × 16_500_000_000 = 11.55e12; / 1e6 = 11_550_000.
		{"sonnet 4.5 us", "us." + sonnet45, contracts.Usage{InputTokens: 1000, OutputTokens: 500}, 11_550_000},
		// 100×3.3e9 + 10×16.5e9 + 2000×0.33e9 + 1000×4.125e9
		// = 3.3e11 + 1.65e11 + 6.6e11 + 4.125e12 = 5.28e12; / 1e6 = 5_280_000.
		{"sonnet 4.5 us with cache", "us." + sonnet45, contracts.Usage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 2000, CacheWriteInputTokens: 1000}, 5_280_000},
		// 1 × 8_750_000 / 1e6 = 8.75 nano, rounded up to 9.
		{"nova micro one cache read rounds up", novaMic, contracts.Usage{CacheReadInputTokens: 1}, 9},
		// 4 × 8_750_000 / 1e6 = 35 exactly: no rounding when nothing is left over.
		{"nova micro four cache reads exact", novaMic, contracts.Usage{CacheReadInputTokens: 4}, 35},
		// 1×35e6 + 1×140e6 + 1×8.75e6 = 183.75e6; / 1e6 = 183.75, up to 184.
		{"nova micro mixed", novaMic, contracts.Usage{InputTokens: 1, OutputTokens: 1, CacheReadInputTokens: 1}, 184},
		// 1000 × 720_000_000 × 2 = 1.44e12; / 1e6 = 1_440_000.
		{"llama without cache tokens", llama33, contracts.Usage{InputTokens: 1000, OutputTokens: 1000}, 1_440_000},
		// 1e9 tokens of each kind on Opus 4.1: 1e9 × (15 + 75 + 1.5 + 18.75)e9 = 1.1025e20,
		// past int64 before the division; / 1e6 = 110_250_000_000_000 ($110,250).
		{"opus 4.1 at 1e9 tokens each", opus41, contracts.Usage{InputTokens: 1e9, OutputTokens: 1e9, CacheReadInputTokens: 1e9, CacheWriteInputTokens: 1e9}, 110_250_000_000_000},
		// 1e9 × 75e9 = 7.5e19 alone exceeds MaxInt64 (9.2e18); / 1e6 = 75_000_000_000_000.
		{"opus 4.1 output at 1e9", opus41, contracts.Usage{OutputTokens: 1e9}, 75_000_000_000_000},
	}
	tbl := embedded(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tbl.TokenCost(tc.model, tc.u)
			if err != nil {
				t.Fatalf("TokenCost: %v", err)
			}
			if got != tc.want {
				t.Errorf("TokenCost = %d (%s), want %d (%s)", int64(got), got, int64(tc.want), tc.want)
			}
			pkg, err := pricing.TokenCost(tc.model, tc.u)
			if err != nil || pkg != got {
				t.Errorf("package TokenCost = %d, %v; want %d", int64(pkg), err, int64(got))
			}
		})
	}
}

func loadTable(t *testing.T, models string) *pricing.Table {
	t.Helper()
	tbl, err := pricing.Load([]byte(`{"version":"t","currency":"USD","unit":"per_million_tokens","models":` + models + `}`))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tbl
}

func TestTokenCostRoundsUpOnceAtTheEnd(t *testing.T) {
	// $0.0000005 per million = 500 nano per million = 0.0005 nano per token.
	tbl := loadTable(t, `{"m":{"input":"0.0000005","output":"0.0000005","cache_read":"0.0000005","cache_write":"0.0000005","source":"s","as_of":"2026-01-01"}}`)
	tests := []struct {
		u    contracts.Usage
		want pricing.Nano
	}{
		// 0.0005 nano: any positive cost is at least one nano, never zero.
		{contracts.Usage{InputTokens: 1}, 1},
		// 4 × 0.0005 = 0.002 nano, up to 1. Rounding each part up would give 4.
		{contracts.Usage{InputTokens: 1, OutputTokens: 1, CacheReadInputTokens: 1, CacheWriteInputTokens: 1}, 1},
		// 2000 × 0.0005 = 1 nano exactly.
		{contracts.Usage{InputTokens: 1000, OutputTokens: 1000}, 1},
		// 2001 × 0.0005 = 1.0005 nano, up to 2.
		{contracts.Usage{InputTokens: 1000, OutputTokens: 1001}, 2},
	}
	for _, tc := range tests {
		got, err := tbl.TokenCost("m", tc.u)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("TokenCost(%+v) = %d, want %d", tc.u, int64(got), int64(tc.want))
		}
	}
}

func TestTokenCostOverflow(t *testing.T) {
	// $9,000,000,000 per million = 9e18 nano per million = 9e12 nano per token.
	tbl := loadTable(t, `{"m":{"input":"9000000000","output":"9000000000","cache_read":"9000000000","cache_write":"9000000000","source":"s","as_of":"2026-01-01"}}`)
	// 1_024_000 × 9e12 = 9.216e18 < MaxInt64 (9.223e18): fits.
	got, err := tbl.TokenCost("m", contracts.Usage{InputTokens: 1_024_000})
	if err != nil || got != 9_216_000_000_000_000_000 {
		t.Errorf("largest fitting cost = %d, %v", int64(got), err)
	}
	for _, u := range []contracts.Usage{
		{InputTokens: 1_025_000}, // 9.225e18 > MaxInt64
		{InputTokens: 1_024_000, OutputTokens: 1_024_000},
		{InputTokens: math.MaxInt64},
		{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, CacheReadInputTokens: math.MaxInt64, CacheWriteInputTokens: math.MaxInt64},
	} {
		if got, err := tbl.TokenCost("m", u); !errors.Is(err, pricing.ErrOverflow) {
			t.Errorf("TokenCost(%+v) = %d, %v; want ErrOverflow", u, int64(got), err)
		}
	}
}

func TestTokenCostErrors(t *testing.T) {
	tbl := embedded(t)
	tests := []struct {
		name  string
		model string
		u     contracts.Usage
		want  error
	}{
		{"unknown model", "anthropic.claude-unknown-v1:0", contracts.Usage{InputTokens: 1}, pricing.ErrUnknownModel},
		{"empty model", "", contracts.Usage{}, pricing.ErrUnknownModel},
		{"profile prefix is not stripped", "jp." + sonnet45, contracts.Usage{InputTokens: 1}, pricing.ErrUnknownModel},
		{"arn is not resolved", "arn:aws:bedrock:us-east-1::foundation-model/" + sonnet45, contracts.Usage{InputTokens: 1}, pricing.ErrUnknownModel},
		{"negative input", sonnet45, contracts.Usage{InputTokens: -1}, pricing.ErrInvalidUsage},
		{"negative output", sonnet45, contracts.Usage{OutputTokens: -1}, pricing.ErrInvalidUsage},
		{"negative cache read", sonnet45, contracts.Usage{CacheReadInputTokens: -1}, pricing.ErrInvalidUsage},
		{"negative cache write", sonnet45, contracts.Usage{CacheWriteInputTokens: math.MinInt64}, pricing.ErrInvalidUsage},
		{"cache read on a no-cache model", llama33, contracts.Usage{InputTokens: 10, CacheReadInputTokens: 1}, pricing.ErrCacheUnsupported},
		{"cache write on a no-cache model", "us." + llama33, contracts.Usage{CacheWriteInputTokens: 1}, pricing.ErrCacheUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tbl.TokenCost(tc.model, tc.u)
			if !errors.Is(err, tc.want) {
				t.Fatalf("TokenCost = %d, %v; want %v", int64(got), err, tc.want)
			}
			if tc.want == pricing.ErrUnknownModel && !strings.Contains(err.Error(), `"`+tc.model+`"`) {
				t.Errorf("error %q does not quote the model id", err)
			}
		})
	}
	if _, err := tbl.Price("nope"); !errors.Is(err, pricing.ErrUnknownModel) {
		t.Errorf("Price: %v", err)
	}
}

// A model with only one kind of cache price rejects only the other kind.
func TestPartialCacheSupport(t *testing.T) {
	tbl := loadTable(t, `{"m":{"input":"1.00","output":"2.00","cache_read":"0.10","source":"s","as_of":"2026-01-01"}}`)
	// 10 × 100_000_000 / 1e6 = 1_000.
	if got, err := tbl.TokenCost("m", contracts.Usage{CacheReadInputTokens: 10}); err != nil || got != 1_000 {
		t.Errorf("cache read: %d, %v", int64(got), err)
	}
	if _, err := tbl.TokenCost("m", contracts.Usage{CacheWriteInputTokens: 10}); !errors.Is(err, pricing.ErrCacheUnsupported) {
		t.Errorf("cache write: %v", err)
	}
	// An explicit zero is a price: free cache writes are allowed and cost nothing.
	free := loadTable(t, `{"m":{"input":"1.00","output":"2.00","cache_write":"0.00","source":"s","as_of":"2026-01-01"}}`)
	if got, err := free.TokenCost("m", contracts.Usage{CacheWriteInputTokens: 10}); err != nil || got != 0 {
		t.Errorf("free cache write: %d, %v", int64(got), err)
	}
}

func TestModelsSorted(t *testing.T) {
	tbl := embedded(t)
	ids := tbl.Models()
	if !slices.IsSorted(ids) || len(ids) < 35 {
		t.Fatalf("Models() = %d ids, sorted %v", len(ids), slices.IsSorted(ids))
	}
	ids[0] = "mutated"
	if tbl.Models()[0] == "mutated" {
		t.Error("Models returned the table's own slice")
	}
}

const validModel = `"input":"1.00","output":"2.00","source":"s","as_of":"2026-01-01"`

func tableDoc(models string) string {
	return `{"version":"t","currency":"USD","unit":"per_million_tokens","models":` + models + `}`
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		path string
	}{
		{"unknown model field", tableDoc(`{"m":{` + validModel + `,"batch_input":"0.50"}}`), "models.m.batch_input"},
		{"unknown top-level field", `{"version":"t","currency":"USD","unit":"per_million_tokens","region":"us-east-1","models":{"m":{` + validModel + `}}}`, "region"},
		{"case-variant key", tableDoc(`{"m":{"Input":"1.00","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.Input"},
		{"duplicate model", tableDoc(`{"m":{` + validModel + `},"m":{` + validModel + `}}`), "models.m"},
		{"duplicate price key", tableDoc(`{"m":{"input":"1.00",` + validModel + `}}`), "models.m.input"},
		{"float price", tableDoc(`{"m":{"input":1.00,"output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"negative price", tableDoc(`{"m":{"input":"-1.00","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"exponent price", tableDoc(`{"m":{"input":"1e-6","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"ten decimals", tableDoc(`{"m":{"input":"1.0000000001","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"leading zero", tableDoc(`{"m":{"input":"01.00","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"empty output", tableDoc(`{"m":{"input":"1.00","output":"","source":"s","as_of":"2026-01-01"}}`), "models.m.output"},
		{"zero input", tableDoc(`{"m":{"input":"0.00","output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"zero output", tableDoc(`{"m":{"input":"1.00","output":"0","source":"s","as_of":"2026-01-01"}}`), "models.m.output"},
		{"bad cache read", tableDoc(`{"m":{` + validModel + `,"cache_read":"0.1.0"}}`), "models.m.cache_read"},
		{"null cache read", tableDoc(`{"m":{` + validModel + `,"cache_read":null}}`), "models.m.cache_read"},
		{"numeric cache write", tableDoc(`{"m":{` + validModel + `,"cache_write":3.75}}`), "models.m.cache_write"},
		{"empty cache write", tableDoc(`{"m":{` + validModel + `,"cache_write":""}}`), "models.m.cache_write"},
		{"object cache write", tableDoc(`{"m":{` + validModel + `,"cache_write":{"a":1}}}`), "models.m.cache_write"},
		{"missing input", tableDoc(`{"m":{"output":"2.00","source":"s","as_of":"2026-01-01"}}`), "models.m.input"},
		{"missing source", tableDoc(`{"m":{"input":"1.00","output":"2.00","as_of":"2026-01-01"}}`), "models.m.source"},
		{"blank source", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"  ","as_of":"2026-01-01"}}`), "models.m.source"},
		{"missing as_of", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s"}}`), "models.m.as_of"},
		{"as_of not a date", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s","as_of":"November 2026"}}`), "models.m.as_of"},
		{"as_of one-digit month", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s","as_of":"2026-1-01"}}`), "models.m.as_of"},
		{"as_of month 13", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s","as_of":"2026-13-01"}}`), "models.m.as_of"},
		{"as_of February 30", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s","as_of":"2026-02-30"}}`), "models.m.as_of"},
		{"as_of with time", tableDoc(`{"m":{"input":"1.00","output":"2.00","source":"s","as_of":"2026-11-01T00:00:00Z"}}`), "models.m.as_of"},
		{"model id with space", tableDoc(`{"us. m":{` + validModel + `}}`), "models.us. m"},
		{"empty model id", tableDoc(`{"":{` + validModel + `}}`), "models."},
		{"missing version", `{"currency":"USD","unit":"per_million_tokens","models":{"m":{` + validModel + `}}}`, "version"},
		{"blank version", `{"version":" ","currency":"USD","unit":"per_million_tokens","models":{"m":{` + validModel + `}}}`, "version"},
		{"wrong currency", `{"version":"t","currency":"EUR","unit":"per_million_tokens","models":{"m":{` + validModel + `}}}`, "currency"},
		{"wrong unit", `{"version":"t","currency":"USD","unit":"per_thousand_tokens","models":{"m":{` + validModel + `}}}`, "unit"},
		{"missing unit", `{"version":"t","currency":"USD","models":{"m":{` + validModel + `}}}`, "unit"},
		{"no models", tableDoc(`{}`), "models"},
		{"null models", tableDoc(`null`), "models"},
		{"trailing data", tableDoc(`{"m":{`+validModel+`}}`) + "x", ""},
		{"empty document", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pricing.Load([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Load accepted %s", tc.doc)
			}
			if !errors.Is(err, pricing.ErrInvalidTable) || !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalidTable and contracts.ErrInvalid", err)
			}
			var fe *contracts.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, not a *contracts.FieldError", err)
			}
			if tc.path != "" && fe.Path != tc.path {
				t.Errorf("path = %q, want %q (err %v)", fe.Path, tc.path, err)
			}
		})
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFromEnvOverride(t *testing.T) {
	// An operator's current price for a model the build does not know, and a
	// new price for one it does.
	path := writeFile(t, tableDoc(`{"test.model-v1:0":{"input":"2.00","output":"8.00","source":"ops ticket 42","as_of":"2026-12-15"},`+
		`"us.`+sonnet45+`":{"input":"4.00","output":"20.00","cache_read":"0.40","cache_write":"5.00","source":"s","as_of":"2026-12-15"}}`))
	t.Setenv(pricing.EnvPricingFile, path)
	tbl, err := pricing.FromEnv()
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	// 1000 × 2e9 + 1000 × 8e9 = 1e13; / 1e6 = 10_000_000.
	if got, err := tbl.TokenCost("test.model-v1:0", contracts.Usage{InputTokens: 1000, OutputTokens: 1000}); err != nil || got != 10_000_000 {
		t.Errorf("override model: %d, %v", int64(got), err)
	}
	// 1000 × 4e9 = 4e12; / 1e6 = 4_000_000 (embedded would give 3_300_000).
	if got, err := tbl.TokenCost("us."+sonnet45, contracts.Usage{InputTokens: 1000}); err != nil || got != 4_000_000 {
		t.Errorf("overridden price: %d, %v", int64(got), err)
	}
	// The file replaces the table; it does not merge with the embedded one.
	if _, err := tbl.Price(novaMic); !errors.Is(err, pricing.ErrUnknownModel) {
		t.Errorf("embedded model still present: %v", err)
	}
	// The package-level TokenCost stays on the embedded table.
	if got, err := pricing.TokenCost("us."+sonnet45, contracts.Usage{InputTokens: 1000}); err != nil || got != 3_300_000 {
		t.Errorf("package TokenCost: %d, %v", int64(got), err)
	}
}

func TestFromEnvErrors(t *testing.T) {
	t.Run("invalid file", func(t *testing.T) {
		path := writeFile(t, tableDoc(`{"m":{"input":"3.0","output":"15","source":"s","as_of":"2026-11-31"}}`))
		t.Setenv(pricing.EnvPricingFile, path)
		if _, err := pricing.FromEnv(); !errors.Is(err, pricing.ErrInvalidTable) || !strings.Contains(err.Error(), path) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Setenv(pricing.EnvPricingFile, filepath.Join(t.TempDir(), "absent.json"))
		if _, err := pricing.FromEnv(); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("set but empty", func(t *testing.T) {
		t.Setenv(pricing.EnvPricingFile, "")
		if _, err := pricing.FromEnv(); err == nil {
			t.Error("empty PRICING_FILE accepted")
		}
	})
}

func TestFromEnvUnsetUsesEmbedded(t *testing.T) {
	t.Setenv(pricing.EnvPricingFile, "") // restores the original value afterwards
	if err := os.Unsetenv(pricing.EnvPricingFile); err != nil {
		t.Fatal(err)
	}
	tbl, err := pricing.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if tbl != embedded(t) {
		t.Error("FromEnv without PRICING_FILE did not return the embedded table")
	}
}

func TestEmbeddedIsCached(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]*pricing.Table, 8)
	for i := range got {
		wg.Go(func() {
			tbl, err := pricing.Embedded()
			if err != nil {
				t.Error(err)
			}
			got[i] = tbl
		})
	}
	wg.Wait()
	for _, tbl := range got[1:] {
		if tbl != got[0] {
			t.Fatal("Embedded returned different tables")
		}
	}
}

// WorstCost bounds every usage within its token counts: the input side at the
// dearest input-side rate (Sonnet 4.5's cache write, 1.25× input), whatever
// split of the prompt among input, cache read and cache write the provider
// reports.
func TestWorstCost(t *testing.T) {
	tbl := embedded(t)
	model := "us." + sonnet45
	// 1000 × 4_125_000_000 + 500 × 16_500_000_000 = 12.375e12; / 1e6 = 12_375_000.
	worst, err := tbl.WorstCost(model, 1000, 500)
	if err != nil || worst != 12_375_000 {
		t.Fatalf("WorstCost = %d, %v; want 12375000", int64(worst), err)
	}
	for _, u := range []contracts.Usage{
		{InputTokens: 1000, OutputTokens: 500},
		{CacheWriteInputTokens: 1000, OutputTokens: 500},
		{InputTokens: 400, CacheReadInputTokens: 300, CacheWriteInputTokens: 300, OutputTokens: 500},
		{InputTokens: 1, OutputTokens: 1},
	} {
		c, err := tbl.TokenCost(model, u)
		if err != nil || c > worst {
			t.Errorf("TokenCost(%+v) = %s (%v), above the worst case %s", u, c, err, worst)
		}
	}
	// A model without prompt caching: the input rate.
	if w, err := tbl.WorstCost(llama33, 1000, 1000); err != nil || w != 1_440_000 {
		t.Errorf("llama WorstCost = %d, %v; want 1440000", int64(w), err)
	}
	// Rounded up like TokenCost: never below any cost it bounds.
	tiny := loadTable(t, `{"m":{"input":"0.0000005","output":"0.0000005","source":"s","as_of":"2026-01-01"}}`)
	if w, err := tiny.WorstCost("m", 1, 0); err != nil || w != 1 {
		t.Errorf("tiny WorstCost = %d, %v; want 1", int64(w), err)
	}
	if _, err := tbl.WorstCost("no-such-model", 1, 1); !errors.Is(err, pricing.ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := tbl.WorstCost(model, -1, 1); !errors.Is(err, pricing.ErrInvalidUsage) {
		t.Errorf("negative tokens: %v", err)
	}
}
