package pricing

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

var (
	// ErrUnknownModel means the table has no price for the model id. Callers
	// must treat it as fatal: an unpriced call cannot be held to the cost cap.
	ErrUnknownModel = errors.New("pricing: unknown model")
	// ErrInvalidUsage is returned for negative token counts.
	ErrInvalidUsage = errors.New("pricing: invalid usage")
	// ErrCacheUnsupported is returned when usage reports cache tokens for a
	// model whose table entry has no price for that kind of cache token.
	ErrCacheUnsupported = errors.New("pricing: cache tokens for a model without prompt caching")
	// ErrOverflow is returned when a cost does not fit in Nano.
	ErrOverflow = errors.New("pricing: cost overflows")
	// ErrInvalidTable is matched by every Load error; such errors also match
	// contracts.ErrInvalid and unwrap to a *contracts.FieldError.
	ErrInvalidTable = errors.New("pricing: invalid price table")
)

// EnvPricingFile names a price file that replaces the embedded table in
// FromEnv, so an operator can ship current prices without a rebuild.
const EnvPricingFile = "PRICING_FILE"

// Price is one model's on-demand price. Amounts are nano-USD per million
// tokens, which keeps fractional-cent prices such as $0.00875 exact.
type Price struct {
	Model  string
	Input  Nano
	Output Nano
	// CacheRead and CacheWrite are meaningful only when the matching
	// Supported flag is set; a model without prompt caching has no price,
	// which is different from a price of zero.
	CacheRead           Nano
	CacheReadSupported  bool
	CacheWrite          Nano
	CacheWriteSupported bool
	Source              string
	AsOf                string
}

// Table is a validated, immutable price table; it is safe for concurrent use.
type Table struct {
	version string
	prices  map[string]Price
}

// The file format. Fields without omitempty are required by DecodeStrict.
type tableFile struct {
	Version  string               `json:"version"`
	Currency string               `json:"currency"`
	Unit     string               `json:"unit"`
	Models   map[string]modelFile `json:"models"`
}

type modelFile struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	// RawMessage rather than *string so an explicit null is rejected instead
	// of silently meaning "no caching".
	CacheRead  json.RawMessage `json:"cache_read,omitempty"`
	CacheWrite json.RawMessage `json:"cache_write,omitempty"`
	Source     string          `json:"source"`
	AsOf       string          `json:"as_of"`
}

// modelIDPattern admits Bedrock model and inference-profile ids ("us.x:0") and
// ARNs, and rejects whitespace and look-alike characters that would make an
// entry impossible to match.
var modelIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,511}$`)

func invalid(path, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrInvalidTable, &contracts.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// Load parses and validates a price table.
func Load(data []byte) (*Table, error) {
	var f tableFile
	if err := contracts.DecodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTable, err)
	}
	if strings.TrimSpace(f.Version) == "" {
		return nil, invalid("version", "must not be empty")
	}
	if f.Currency != "USD" {
		return nil, invalid("currency", "must be \"USD\", got %q", f.Currency)
	}
	if f.Unit != "per_million_tokens" {
		return nil, invalid("unit", "must be \"per_million_tokens\", got %q", f.Unit)
	}
	if len(f.Models) == 0 {
		// An empty table would fail every run; that is a broken file, and
		// saying so at load time beats failing on the first model call.
		return nil, invalid("models", "must list at least one model")
	}
	t := &Table{version: f.Version, prices: make(map[string]Price, len(f.Models))}
	for id, m := range f.Models {
		p, err := parseModel(id, m)
		if err != nil {
			return nil, err
		}
		t.prices[id] = p
	}
	return t, nil
}

func parseModel(id string, m modelFile) (Price, error) {
	path := "models." + id
	if !modelIDPattern.MatchString(id) {
		return Price{}, invalid(path, "model id must match %s", modelIDPattern)
	}
	p := Price{Model: id, Source: m.Source, AsOf: m.AsOf}
	var err error
	if p.Input, err = ParseUSD(m.Input); err != nil {
		return Price{}, invalid(path+".input", "%v", err)
	}
	if p.Output, err = ParseUSD(m.Output); err != nil {
		return Price{}, invalid(path+".output", "%v", err)
	}
	// A zero token price would let a run spend without touching the cap.
	// Cache prices may be zero: a provider can make cache writes free.
	if p.Input == 0 {
		return Price{}, invalid(path+".input", "must be greater than zero")
	}
	if p.Output == 0 {
		return Price{}, invalid(path+".output", "must be greater than zero")
	}
	if p.CacheRead, p.CacheReadSupported, err = optionalUSD(m.CacheRead); err != nil {
		return Price{}, invalid(path+".cache_read", "%v", err)
	}
	if p.CacheWrite, p.CacheWriteSupported, err = optionalUSD(m.CacheWrite); err != nil {
		return Price{}, invalid(path+".cache_write", "%v", err)
	}
	if strings.TrimSpace(m.Source) == "" {
		return Price{}, invalid(path+".source", "must not be empty")
	}
	if d, err := time.Parse(time.DateOnly, m.AsOf); err != nil || d.Format(time.DateOnly) != m.AsOf {
		return Price{}, invalid(path+".as_of", "must be a YYYY-MM-DD date, got %q", m.AsOf)
	}
	return p, nil
}

func optionalUSD(raw json.RawMessage) (Nano, bool, error) {
	if raw == nil {
		return 0, false, nil
	}
	if string(raw) == "null" {
		return 0, false, errors.New("omit the field for a model without prompt caching; null is not a price")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, false, errors.New("wrong type: must be a decimal string")
	}
	n, err := ParseUSD(s)
	if err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// LoadFile reads and validates a price file.
func LoadFile(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	t, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

//go:embed bedrock_prices.json
var embeddedPrices []byte

var embedded = sync.OnceValues(func() (*Table, error) { return Load(embeddedPrices) })

// Embedded returns the table compiled into the binary, parsed once.
func Embedded() (*Table, error) { return embedded() }

// FromEnv returns the table named by PRICING_FILE, or the embedded table when
// the variable is unset. A variable that is set but empty is an error rather
// than a silent fall back to possibly stale built-in prices. The file is read
// on every call; load once at cold start and keep the table.
func FromEnv() (*Table, error) {
	path, ok := os.LookupEnv(EnvPricingFile)
	if !ok {
		return Embedded()
	}
	if path == "" {
		return nil, fmt.Errorf("pricing: %s is set but empty", EnvPricingFile)
	}
	return LoadFile(path)
}

// Version identifies the price table revision.
func (t *Table) Version() string { return t.version }

// Price returns the price of an exact model or inference-profile id. Ids are
// not normalised: "us." and "global." profiles can differ in price, so one
// must never be billed at the other's rate.
func (t *Table) Price(model string) (Price, error) {
	p, ok := t.prices[model]
	if !ok {
		return Price{}, fmt.Errorf("%w %q", ErrUnknownModel, model)
	}
	return p, nil
}

// Models returns every priced id, sorted.
func (t *Table) Models() []string {
	ids := make([]string, 0, len(t.prices))
	for id := range t.prices {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TokenCost is the cost of one model call: the exact sum over the four token
// kinds of tokens × price-per-million / 1e6, rounded up once at the end so
// the cost cap is never under-counted.
func (t *Table) TokenCost(model string, u contracts.Usage) (Nano, error) {
	p, err := t.Price(model)
	if err != nil {
		return 0, err
	}
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheWriteInputTokens < 0 {
		return 0, fmt.Errorf("%w: negative token count %+v", ErrInvalidUsage, u)
	}
	if u.CacheReadInputTokens > 0 && !p.CacheReadSupported {
		return 0, fmt.Errorf("%w: %q has no cache read price", ErrCacheUnsupported, model)
	}
	if u.CacheWriteInputTokens > 0 && !p.CacheWriteSupported {
		return 0, fmt.Errorf("%w: %q has no cache write price", ErrCacheUnsupported, model)
	}
	// Each product is below 2^126 (both factors are non-negative int64), so
	// the four-term sum fits in 128 bits without a carry out.
	var hi, lo uint64
	for _, part := range [...][2]int64{
		{u.InputTokens, int64(p.Input)},
		{u.OutputTokens, int64(p.Output)},
		{u.CacheReadInputTokens, int64(p.CacheRead)},
		{u.CacheWriteInputTokens, int64(p.CacheWrite)},
	} {
		ph, pl := bits.Mul64(uint64(part[0]), uint64(part[1]))
		var carry uint64
		lo, carry = bits.Add64(lo, pl, 0)
		hi, _ = bits.Add64(hi, ph, carry)
	}
	const perMillion = 1_000_000
	if hi >= perMillion {
		return 0, fmt.Errorf("%w: %q %+v", ErrOverflow, model, u)
	}
	q, r := bits.Div64(hi, lo, perMillion)
	if q > math.MaxInt64 || (q == math.MaxInt64 && r != 0) {
		return 0, fmt.Errorf("%w: %q %+v", ErrOverflow, model, u)
	}
	if r != 0 {
		q++
	}
	return Nano(q), nil
}

// WorstCost is an upper bound of what one call can cost that sends at most
// inputTokens and may answer up to outputTokens. The input side is priced at
// the dearest of the input, cache-read and cache-write rates the model has
// (a provider may bill part of a prompt as a cache write, which costs more
// than plain input on some models), so the bound holds however the provider
// splits the prompt among those kinds; the output side at the output rate.
// Rounded up, like TokenCost, so it is never below the TokenCost of any
// usage within those counts.
func (t *Table) WorstCost(model string, inputTokens, outputTokens int64) (Nano, error) {
	p, err := t.Price(model)
	if err != nil {
		return 0, err
	}
	in := p.Input
	if p.CacheReadSupported && p.CacheRead > in {
		in = p.CacheRead
	}
	if p.CacheWriteSupported && p.CacheWrite > in {
		in = p.CacheWrite
	}
	worst := &Table{version: t.version, prices: map[string]Price{model: {Model: model, Input: in, Output: p.Output}}}
	return worst.TokenCost(model, contracts.Usage{InputTokens: inputTokens, OutputTokens: outputTokens})
}

// TokenCost prices usage against the embedded table. It ignores PRICING_FILE;
// a caller honouring the operator's override must use FromEnv and the
// returned Table.
func TokenCost(model string, u contracts.Usage) (Nano, error) {
	t, err := Embedded()
	if err != nil {
		return 0, err
	}
	return t.TokenCost(model, u)
}
