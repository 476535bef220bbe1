package toolpolicy_test

import (
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

func ExampleGetToolRiskDecision() {
	d, err := toolpolicy.GetToolRiskDecision("file_court_document", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Tier, d.Action, d.MatchedPolicy)
	fmt.Println(d.Reason)
	// Output:
	// high require_approval tools.file_court_document
	// Irreversible external court filing that must not run without human approval.
}
