package pricing

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Nano is an amount of money in nano-USD (1e-9 USD). Integers keep sums exact;
// nine decimals hold every published per-token price without rounding.
type Nano int64

const nanoPerUSD = 1_000_000_000

// ErrInvalidAmount is returned by ParseUSD for anything but a plain decimal.
var ErrInvalidAmount = errors.New("pricing: invalid USD amount")

// ParseUSD parses a non-negative decimal dollar amount such as "3.30" or
// "0.00875". It accepts only digits with at most nine decimals: no sign,
// exponent, spaces, or leading zeros, because a price file is reviewed by eye
// and every spelling of a number should be the obvious one.
func ParseUSD(s string) (Nano, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	bad := func(why string) (Nano, error) {
		return 0, fmt.Errorf("%w %q: %s", ErrInvalidAmount, s, why)
	}
	if whole == "" {
		return bad("missing integer part")
	}
	if !allDigits(whole) {
		return bad("integer part must be digits only")
	}
	if len(whole) > 1 && whole[0] == '0' {
		return bad("leading zero")
	}
	if hasDot {
		if frac == "" || len(frac) > 9 {
			return bad("need 1 to 9 decimal digits")
		}
		if !allDigits(frac) {
			return bad("decimals must be digits only")
		}
	}
	const maxWhole = math.MaxInt64 / nanoPerUSD
	if len(whole) > 10 {
		return bad("too large")
	}
	var w int64
	for _, c := range whole {
		w = w*10 + int64(c-'0')
	}
	var f int64
	for i := range 9 {
		f *= 10
		if i < len(frac) {
			f += int64(frac[i] - '0')
		}
	}
	if w > maxWhole || (w == maxWhole && f > math.MaxInt64%nanoPerUSD) {
		return bad("too large")
	}
	return Nano(w*nanoPerUSD + f), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatUSD renders n as a decimal dollar string with trailing zeros trimmed
// but at least two decimals ("0.00", "1.50", "0.004215"), so ledger lines
// read as money and still show sub-cent costs exactly.
func FormatUSD(n Nano) string {
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign = "-"
		u = -u // wraps correctly for math.MinInt64
	}
	frac := fmt.Sprintf("%09d", u%nanoPerUSD)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s", sign, u/nanoPerUSD, frac)
}

// String makes Nano print as dollars in logs and test failures.
func (n Nano) String() string { return FormatUSD(n) }
