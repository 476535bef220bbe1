package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

// intOf reads a YAML number (or a numeric string) of the raw template.
func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

// functionTimeout is a function's Timeout, else Globals', else Lambda's 3 s.
func functionTimeout(raw object, fnID string) int {
	if n, ok := intOf(get(resourcesOf(raw)[fnID], "Properties", "Timeout")); ok {
		return n
	}
	if n, ok := intOf(get(raw, "Globals", "Function", "Timeout")); ok {
		return n
	}
	return 3
}

// onlyEvent returns fnID's one event, failing unless it has exactly one.
func onlyEvent(t *testing.T, raw object, fnID string) (string, object) {
	t.Helper()
	evs, _ := get(resourcesOf(raw)[fnID], "Properties", "Events").(object)
	if len(evs) != 1 {
		t.Fatalf("%s wants exactly one event, got %v", fnID, keys(evs))
	}
	for name, ev := range evs {
		m, _ := ev.(object)
		return name, m
	}
	return "", nil
}

// outcomeTime is what a tool call's outcome write needs beyond the tool's
// timeout: agent.Config.OutcomeTime's default, which the worker runs with.
const outcomeTime = 5 * time.Second

// TestWorkerHasTimeForTheLongestTool: a worker starts a tool call only with
// the tool's timeout and the outcome write's time left before its deadline,
// and otherwise hands the run on. A catalog allows tools of up to
// catalog.MaxTimeout, so the worker's Timeout must exceed that plus the write,
// or such a tool would never start: every invocation would hand the run on.
func TestWorkerHasTimeForTheLongestTool(t *testing.T) {
	raw := rawTemplate(t)
	timeout := time.Duration(functionTimeout(raw, "WorkerFunction")) * time.Second
	if need := catalog.MaxTimeout + outcomeTime; timeout <= need {
		t.Errorf("WorkerFunction: Timeout %s, want more than the longest tool's %s plus its outcome write's %s (%s)",
			timeout, catalog.MaxTimeout, outcomeTime, need)
	}
}

// TestWorkerQueue: the queue that hands runs to the worker, as AWS advises
// for a Lambda SQS event source, with a dead-letter queue that someone
// watches.
func TestWorkerQueue(t *testing.T) {
	raw := rawTemplate(t)
	q := mustResource(t, raw, "WorkerQueue", "AWS::SQS::Queue")
	p, _ := q["Properties"].(object)

	// A message must not come back while its worker may still be running:
	// AWS advises a visibility timeout of 6x the function's timeout.
	vis, ok := intOf(p["VisibilityTimeout"])
	if timeout := functionTimeout(raw, "WorkerFunction"); !ok || vis < 6*timeout {
		t.Errorf("WorkerQueue: VisibilityTimeout %v, want at least 6 x WorkerFunction's Timeout (%d s) = %d", p["VisibilityTimeout"], timeout, 6*timeout)
	}
	if vis > 43200 {
		t.Errorf("WorkerQueue: VisibilityTimeout %d is above SQS's 12 hours", vis)
	}

	dlq, attr, ok := getAtt(get(p, "RedrivePolicy", "deadLetterTargetArn"))
	if !ok || attr != "Arn" || dlq != "WorkerDeadLetterQueue" {
		t.Fatalf("WorkerQueue: RedrivePolicy.deadLetterTargetArn must be !GetAtt WorkerDeadLetterQueue.Arn, got %v", get(p, "RedrivePolicy"))
	}
	if n, ok := intOf(get(p, "RedrivePolicy", "maxReceiveCount")); !ok || n < 1 || n > 10 {
		t.Errorf("WorkerQueue: RedrivePolicy.maxReceiveCount %v, want 1 to 10 (a message that keeps failing must stop coming back)", get(p, "RedrivePolicy", "maxReceiveCount"))
	}
	d := mustResource(t, raw, dlq, "AWS::SQS::Queue")
	dp, _ := d["Properties"].(object)
	if _, ok := dp["RedrivePolicy"]; ok {
		t.Errorf("%s has a RedrivePolicy: a dead-letter queue is the end of the line", dlq)
	}
	// A standard queue's message keeps its first enqueue time in the
	// dead-letter queue: it must keep messages longer than the source.
	src, _ := intOf(p["MessageRetentionPeriod"])
	if src == 0 {
		src = 345600 // SQS's default, 4 days
	}
	if n, ok := intOf(dp["MessageRetentionPeriod"]); !ok || n != 1209600 || n <= src {
		t.Errorf("%s: MessageRetentionPeriod %v, want 14 days (1209600), longer than WorkerQueue's %d", dlq, dp["MessageRetentionPeriod"], src)
	}

	// The hand-over and its DLQ are deployed with the stack: FIFO would need
	// group ids the senders do not set.
	for _, id := range []string{"WorkerQueue", dlq} {
		if fifo := get(resourcesOf(raw)[id], "Properties", "FifoQueue"); fifo != nil && fifo != false {
			t.Errorf("%s: FifoQueue %v: the worker queue is a standard queue (pkg/sqs sends no MessageGroupId)", id, fifo)
		}
	}
}

// deadLetterQueues are the queues something sends its failures to: a
// queue's RedrivePolicy target, an event source mapping's OnFailure
// destination, or an EventBridge rule target's DeadLetterConfig.
func deadLetterQueues(raw object) []string {
	var out []string
	for _, r := range resourcesOf(raw) {
		if id, _, ok := getAtt(get(r, "Properties", "RedrivePolicy", "deadLetterTargetArn")); ok {
			out = append(out, id)
		}
		evs, _ := get(r, "Properties", "Events").(object)
		for _, ev := range evs {
			if id, _, ok := getAtt(get(ev, "Properties", "DestinationConfig", "OnFailure", "Destination")); ok {
				out = append(out, id)
			}
		}
		for _, tg := range list(get(r, "Properties", "Targets")) {
			if id, _, ok := getAtt(get(tg, "DeadLetterConfig", "Arn")); ok {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestQueuesEncryptedTLSOnlyAndWatched: every queue is encrypted and refuses
// requests without TLS; every dead-letter queue has an alarm on its depth
// that notifies the alarm topic.
func TestQueuesEncryptedTLSOnlyAndWatched(t *testing.T) {
	raw := rawTemplate(t)
	queues := ofType(raw, "AWS::SQS::Queue")
	if len(queues) != 4 {
		t.Errorf("queues %v, want WorkerQueue, WorkerDeadLetterQueue, StreamDeadLetterQueue and NotificationDeadLetterQueue", keys(queues))
	}
	tlsOnly := map[string]bool{}
	for id, pol := range ofType(raw, "AWS::SQS::QueuePolicy") {
		p, _ := pol["Properties"].(object)
		var covered []string
		for _, q := range list(p["Queues"]) {
			if ref := refOf(q); ref != "" {
				covered = append(covered, ref)
			}
		}
		for _, s := range list(get(p, "PolicyDocument", "Statement")) {
			if str(get(s, "Effect")) != "Deny" || get(s, "Principal") != "*" || !slices.Contains(list(get(s, "Action")), any("sqs:*")) ||
				fmt.Sprint(get(s, "Condition", "Bool", "aws:SecureTransport")) != "false" {
				continue
			}
			var denied []string
			for _, r := range list(get(s, "Resource")) {
				if q, attr, ok := getAtt(r); ok && attr == "Arn" {
					denied = append(denied, q)
				}
			}
			for _, q := range covered {
				if slices.Contains(denied, q) {
					tlsOnly[q] = true
				} else {
					t.Errorf("%s applies to %s but its TLS statement does not name !GetAtt %s.Arn", id, q, q)
				}
			}
		}
	}
	for id, q := range queues {
		p, _ := q["Properties"].(object)
		if p["SqsManagedSseEnabled"] != true && p["KmsMasterKeyId"] == nil {
			t.Errorf("%s: not encrypted (SqsManagedSseEnabled or KmsMasterKeyId)", id)
		}
		if !tlsOnly[id] {
			t.Errorf("%s: no AWS::SQS::QueuePolicy denies sqs:* to requests without aws:SecureTransport", id)
		}
	}

	watched := map[string]bool{}
	for _, al := range ofType(raw, "AWS::CloudWatch::Alarm") {
		p, _ := al["Properties"].(object)
		if p["Namespace"] != "AWS/SQS" || p["MetricName"] != "ApproximateNumberOfMessagesVisible" {
			continue
		}
		var q string
		for _, d := range list(p["Dimensions"]) {
			if id, attr, ok := getAtt(get(d, "Value")); ok && get(d, "Name") == "QueueName" && attr == "QueueName" {
				q = id
			}
		}
		threshold, _ := intOf(p["Threshold"])
		fires := (p["ComparisonOperator"] == "GreaterThanThreshold" && threshold == 0) ||
			(p["ComparisonOperator"] == "GreaterThanOrEqualToThreshold" && threshold == 1)
		notifies := slices.ContainsFunc(list(p["AlarmActions"]), func(a any) bool { return refOf(a) == "AlarmTopic" })
		if q != "" && fires && notifies {
			watched[q] = true
		}
	}
	dlqs := deadLetterQueues(raw)
	if !slices.Equal(dlqs, []string{"NotificationDeadLetterQueue", "StreamDeadLetterQueue", "WorkerDeadLetterQueue"}) {
		t.Errorf("dead-letter queues %v, want [NotificationDeadLetterQueue StreamDeadLetterQueue WorkerDeadLetterQueue]", dlqs)
	}
	for _, q := range dlqs {
		if !watched[q] {
			t.Errorf("%s: no alarm on its depth (AWS/SQS ApproximateNumberOfMessagesVisible > 0 for QueueName !GetAtt %s.QueueName, notifying AlarmTopic)", q, q)
		}
	}
}

// TestWorkerEvent: the worker's one event reads the worker queue, one run
// per invocation, and reports the messages that failed.
func TestWorkerEvent(t *testing.T) {
	raw := rawTemplate(t)
	name, ev := onlyEvent(t, raw, "WorkerFunction")
	if ev["Type"] != "SQS" {
		t.Fatalf("WorkerFunction.%s: Type %v, want SQS", name, ev["Type"])
	}
	p, _ := ev["Properties"].(object)
	if q, attr, _ := getAtt(p["Queue"]); q != "WorkerQueue" || attr != "Arn" {
		t.Errorf("WorkerFunction.%s: Queue must be !GetAtt WorkerQueue.Arn, got %v", name, p["Queue"])
	}
	if n, ok := intOf(p["BatchSize"]); !ok || n != 1 {
		t.Errorf("WorkerFunction.%s: BatchSize %v, want 1 (a run step is long; one run per invocation)", name, p["BatchSize"])
	}
	if !slices.Contains(list(p["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		t.Errorf("WorkerFunction.%s: FunctionResponseTypes must include ReportBatchItemFailures", name)
	}
	if p["Enabled"] == false {
		t.Errorf("WorkerFunction.%s is disabled", name)
	}
	if w, ok := intOf(p["MaximumBatchingWindowInSeconds"]); ok && w > 0 {
		t.Errorf("WorkerFunction.%s: MaximumBatchingWindowInSeconds %d delays every run", name, w)
	}
}

var rateExpr = regexp.MustCompile(`^rate\(([0-9]+) (minute|minutes)\)$`)

// TestSweeperSchedule: the sweeper runs on an EventBridge Scheduler rate of
// minutes, with the default payload (its handler reads none).
func TestSweeperSchedule(t *testing.T) {
	raw := rawTemplate(t)
	name, ev := onlyEvent(t, raw, "SweeperFunction")
	if ev["Type"] != "ScheduleV2" {
		t.Fatalf("SweeperFunction.%s: Type %v, want ScheduleV2 (EventBridge Scheduler)", name, ev["Type"])
	}
	p, _ := ev["Properties"].(object)
	m := rateExpr.FindStringSubmatch(str(p["ScheduleExpression"]))
	if m == nil {
		t.Fatalf("SweeperFunction.%s: ScheduleExpression %v, want rate(N minute[s])", name, p["ScheduleExpression"])
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > 5 || (n == 1) != (m[2] == "minute") {
		t.Errorf("SweeperFunction.%s: %s: a stuck run waits up to one period; want rate(1 minute) to rate(5 minutes), singular for 1", name, m[0])
	}
	if s := str(p["State"]); s != "" && s != "ENABLED" {
		t.Errorf("SweeperFunction.%s: State %s", name, s)
	}
	if in, ok := p["Input"]; ok && !json.Valid([]byte(str(in))) {
		t.Errorf("SweeperFunction.%s: Input %v is not JSON (a templated Lambda target needs JSON)", name, in)
	}
}
