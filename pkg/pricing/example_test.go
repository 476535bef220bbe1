package pricing_test

import (
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

func ExampleTokenCost() {
	// 1,200 × $3.30/M + 350 × $16.50/M = $0.00396 + $0.005775.
	cost, err := pricing.TokenCost("us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		contracts.Usage{InputTokens: 1200, OutputTokens: 350})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pricing.FormatUSD(cost))
	// Output: 0.009735
}
