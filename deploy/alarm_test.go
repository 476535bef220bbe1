package deploy

import (
	"regexp"
	"slices"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// TestFailuresAlarmLeavesOutGovernance: FailuresAlarm counts every failure
// kind but the caller's mistakes and governance working as designed (a run
// stopped by its cost cap or its firm's budget, a warrant nobody used); an
// incident kind is never left out, and every kind it names exists.
func TestFailuresAlarmLeavesOutGovernance(t *testing.T) {
	raw := rawTemplate(t)
	var expr string
	for _, m := range list(get(resourcesOf(raw)["FailuresAlarm"], "Properties", "Metrics")) {
		if e := str(get(m, "Expression")); e != "" {
			expr = e
		}
	}
	if expr == "" {
		t.Fatal("FailuresAlarm has no Metrics Insights expression")
	}
	var excluded []string
	for _, m := range regexp.MustCompile(`failure_kind != '([a-z_]+)'`).FindAllStringSubmatch(expr, -1) {
		excluded = append(excluded, m[1])
	}
	for _, k := range excluded {
		if !failure.Kind(k).Valid() {
			t.Errorf("FailuresAlarm leaves out %q, which is no failure kind", k)
		}
	}
	for _, k := range []failure.Kind{failure.KindCostCapExceeded, failure.KindFirmBudgetExceeded, failure.KindWarrantExpired, failure.KindInvalidRequest,
		failure.KindPreconditionFailed, failure.KindPreconditionRequired} {
		if !slices.Contains(excluded, string(k)) {
			t.Errorf("FailuresAlarm counts %s: governance working (or a caller's mistake) is not an incident", k)
		}
	}
	for _, k := range []failure.Kind{failure.KindWorkerLost, failure.KindEffectOutcomeUnknown, failure.KindLedgerCorrupt, failure.KindInternal,
		failure.KindStoreUnavailable, failure.KindStoreConflict, failure.KindModelError, failure.KindConfigInvalid} {
		if slices.Contains(excluded, string(k)) {
			t.Errorf("FailuresAlarm leaves out %s, an incident", k)
		}
	}
}
