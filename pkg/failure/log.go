package failure

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"
)

// MetricNamespace and MetricName identify the failure counter in CloudWatch.
const (
	MetricNamespace = "Warrant"
	MetricName      = "Failures"
)

// Logger writes one JSON line per envelope that is also a CloudWatch
// Embedded Metric Format document, so the log line and the Failures metric
// can never disagree. It is safe for concurrent use.
type Logger struct {
	l *slog.Logger
}

// NewLogger logs to w, or to stdout (where Lambda picks up EMF) if w is nil,
// at level INFO.
func NewLogger(w io.Writer) *Logger { return NewLevelLogger(w, slog.LevelInfo) }

// NewLevelLogger is NewLogger with the function's LOG_LEVEL. Envelopes are
// written at ERROR, so every level up to ERROR keeps them (and the Failures
// metric they carry); lower levels add the operational lines of Info.
func NewLevelLogger(w io.Writer, level slog.Leveler) *Logger {
	if w == nil {
		w = os.Stdout
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		// created_at is the authoritative time (and feeds the EMF Timestamp);
		// slog's local-zone "time" would be a second, slightly different one.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return &Logger{l: slog.New(h)}
}

var stdoutLogger = NewLogger(nil)

// Info writes an operational line (a function ready, its configuration). Its
// arguments are slog key-value pairs and must be ids and configuration facts
// only: never prompts, tool inputs, model output or error messages.
func (l *Logger) Info(ctx context.Context, msg string, args ...any) {
	sl := stdoutLogger.l
	if l != nil && l.l != nil {
		sl = l.l
	}
	sl.InfoContext(ctx, msg, args...)
}

type emfMetadata struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// Log writes env as a single line. EMF reads dimension values and metric
// values only from the root object, so the envelope fields stay top-level
// and "Failures": 1 sits beside them. A nil or zero Logger logs to stdout.
func (l *Logger) Log(ctx context.Context, env Envelope) {
	sl := stdoutLogger.l
	if l != nil && l.l != nil {
		sl = l.l
	}
	// Dimension values must be non-empty strings or CloudWatch drops the
	// metric; a hand-made envelope gets the same fallbacks Build applies.
	if !env.FailureKind.Valid() {
		env.FailureKind = KindInternal
	}
	if !env.FailureStage.Valid() {
		env.FailureStage = StageUnknown
	}
	ts, err := time.Parse(time.RFC3339Nano, env.CreatedAt)
	if err != nil {
		ts = time.Now()
	}
	attrs := []slog.Attr{
		slog.String("schema_version", env.SchemaVersion),
		slog.String("failure_id", env.FailureID),
		slog.String("run_id", env.RunID),
		slog.String("firm_id", env.FirmID),
		slog.String("matter_id", env.MatterID),
		slog.String("correlation_id", env.CorrelationID),
		slog.String("failure_stage", string(env.FailureStage)),
		slog.String("failure_kind", string(env.FailureKind)),
		slog.String("failed_component", env.FailedComponent),
		slog.Bool("retryable", env.Retryable),
		slog.Int("retry_after_seconds", env.RetryAfterSeconds),
		slog.String("sanitized_summary", env.SanitizedSummary),
		slog.String("recovery_recommendation", env.RecoveryRecommendation),
		slog.String("user_visible_message", env.UserVisibleMessage),
		slog.String("internal_debug_ref", env.InternalDebugRef),
		slog.String("created_at", env.CreatedAt),
	}
	if tc := env.ToolChange; tc != nil {
		attrs = append(attrs, slog.Any("tool_change", *tc))
	}
	attrs = append(attrs,
		slog.Any("_aws", emfMetadata{
			Timestamp: ts.UnixMilli(),
			CloudWatchMetrics: []emfDirective{{
				Namespace:  MetricNamespace,
				Dimensions: [][]string{{"failure_kind", "failure_stage"}},
				Metrics:    []emfMetric{{Name: MetricName, Unit: "Count"}},
			}},
		}),
		slog.Int(MetricName, 1),
	)
	sl.LogAttrs(ctx, slog.LevelError, "failure", attrs...)
}

// Metric writes one EMF line: the metric name's value, with dimensions
// (their names and values: ids and closed words only), in the Warrant
// namespace, so a CloudWatch alarm can watch it.
func (l *Logger) Metric(ctx context.Context, name, unit string, value float64, dims map[string]string) {
	sl := stdoutLogger.l
	if l != nil && l.l != nil {
		sl = l.l
	}
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := []slog.Attr{slog.Any("_aws", emfMetadata{
		Timestamp: time.Now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{Namespace: MetricNamespace, Dimensions: [][]string{keys},
			Metrics: []emfMetric{{Name: name, Unit: unit}}}},
	})}
	for _, k := range keys {
		attrs = append(attrs, slog.String(k, dims[k]))
	}
	attrs = append(attrs, slog.Float64(name, value))
	sl.LogAttrs(ctx, slog.LevelInfo, "metric", attrs...)
}
