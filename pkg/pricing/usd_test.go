package pricing_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

func TestParseUSD(t *testing.T) {
	tests := []struct {
		in   string
		want pricing.Nano
	}{
		{"0", 0},
		{"0.0", 0},
		{"0.00", 0},
		{"3", 3_000_000_000},
		{"3.30", 3_300_000_000},
		{"0.00875", 8_750_000},
		{"4.125", 4_125_000_000},
		{"0.000000001", 1},
		{"12.345678912", 12_345_678_912},
		{"10", 10_000_000_000},
		{"9223372036.854775807", math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := pricing.ParseUSD(tc.in)
			if err != nil {
				t.Fatalf("ParseUSD: %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseUSD(%q) = %d, want %d", tc.in, int64(got), int64(tc.want))
			}
		})
	}
}

func TestParseUSDRejects(t *testing.T) {
	for _, in := range []string{
		"", ".", "3.", ".5", "-1", "-0", "+1", "1e3", "1E3", "03", "00", "00.5", "03.00",
		" 3.00", "3.00 ", "3,00", "3.0000000001", "0x10", "1_000", "3..0", "3.0.0",
		"NaN", "Inf", "٣", "9223372036.854775808", "9223372037", "10000000000", "99999999999999999999",
	} {
		t.Run(in, func(t *testing.T) {
			if n, err := pricing.ParseUSD(in); !errors.Is(err, pricing.ErrInvalidAmount) {
				t.Errorf("ParseUSD(%q) = %d, %v; want ErrInvalidAmount", in, int64(n), err)
			}
		})
	}
}

func TestFormatUSD(t *testing.T) {
	tests := []struct {
		in   pricing.Nano
		want string
	}{
		{0, "0.00"},
		{1, "0.000000001"},
		{4_215_000, "0.004215"},
		{10_000_000, "0.01"},
		{100_000_000, "0.10"},
		{1_500_000_000, "1.50"},
		{3_000_000_000, "3.00"},
		{12_345_678_912, "12.345678912"},
		{math.MaxInt64, "9223372036.854775807"},
		{-1, "-0.000000001"},
		{-1_500_000_000, "-1.50"},
		{math.MinInt64, "-9223372036.854775808"},
	}
	for _, tc := range tests {
		if got := pricing.FormatUSD(tc.in); got != tc.want {
			t.Errorf("FormatUSD(%d) = %q, want %q", int64(tc.in), got, tc.want)
		}
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Nano(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestUSDRoundTrip(t *testing.T) {
	values := []pricing.Nano{0, 1, 9, 10, 99, 100, 999_999_999, 1_000_000_000, 1_000_000_001, math.MaxInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		values = append(values, pricing.Nano(r.Int64()), pricing.Nano(r.Int64N(100_000_000_000)))
	}
	for _, n := range values {
		s := pricing.FormatUSD(n)
		back, err := pricing.ParseUSD(s)
		if err != nil || back != n {
			t.Fatalf("ParseUSD(FormatUSD(%d)) = %d, %v (via %q)", int64(n), int64(back), err, s)
		}
	}
	// Canonical strings survive the other direction unchanged.
	for _, s := range []string{"0.00", "3.30", "0.00875", "16.50", "4.125", "12.345678912", "1000000.00"} {
		n, err := pricing.ParseUSD(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := pricing.FormatUSD(n); got != s {
			t.Errorf("FormatUSD(ParseUSD(%q)) = %q", s, got)
		}
	}
}

func FuzzParseUSD(f *testing.F) {
	for _, s := range []string{"0", "3.30", "0.00875", "9223372036.854775807", "9223372036.854775808", "03", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := pricing.ParseUSD(s)
		if err != nil {
			if !errors.Is(err, pricing.ErrInvalidAmount) {
				t.Fatalf("error does not match ErrInvalidAmount: %v", err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseUSD(%q) = %d, negative", s, int64(n))
		}
		back, err := pricing.ParseUSD(pricing.FormatUSD(n))
		if err != nil || back != n {
			t.Fatalf("round trip of %q: %d, %v", s, int64(back), err)
		}
	})
}
