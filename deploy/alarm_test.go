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
		failure.KindStoreUnavailable, failure.KindStoreConflict, failure.KindModelError, failure.KindConfigInvalid, failure.KindLogDiverged,
		failure.KindModelAnswerLost, failure.KindToolChanged} {
		if slices.Contains(excluded, string(k)) {
			t.Errorf("FailuresAlarm leaves out %s, an incident", k)
		}
	}
}

// TestFirmLogDivergedAlarm (issue 25 C): the sweeper's refusal to sign a
// firm log that does not extend the last checkpoint in the bucket alarms on
// its own, on the metric its failure envelope writes (handlers.CheckpointDue
// logs it at stage projection).
func TestFirmLogDivergedAlarm(t *testing.T) {
	raw := rawTemplate(t)
	p, _ := get(resourcesOf(raw)["FirmLogDivergedAlarm"], "Properties").(object)
	if p == nil {
		t.Fatal("no FirmLogDivergedAlarm")
	}
	dims := map[string]string{}
	for _, d := range list(p["Dimensions"]) {
		dims[str(get(d, "Name"))] = str(get(d, "Value"))
	}
	if str(p["Namespace"]) != failure.MetricNamespace || str(p["MetricName"]) != "Failures" ||
		dims["failure_kind"] != string(failure.KindLogDiverged) || dims["failure_stage"] != string(failure.StageProjection) || len(dims) != 2 ||
		str(p["Statistic"]) != "Sum" || str(p["ComparisonOperator"]) != "GreaterThanOrEqualToThreshold" || str(p["TreatMissingData"]) != "notBreaching" ||
		!slices.ContainsFunc(list(p["AlarmActions"]), func(a any) bool { return refOf(a) == "AlarmTopic" }) {
		t.Fatalf("FirmLogDivergedAlarm %v", p)
	}
}
