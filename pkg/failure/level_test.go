package failure_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// LOG_LEVEL filters the operational lines; failure envelopes (and the
// Failures metric they carry) are written at every level up to ERROR.
func TestLevelLogger(t *testing.T) {
	env := failure.Build(errors.New("boom"), failure.StageInvoke, "test", failure.Identity{})
	for _, tc := range []struct {
		level    slog.Level
		wantInfo bool
	}{
		{slog.LevelDebug, true},
		{slog.LevelInfo, true},
		{slog.LevelWarn, false},
		{slog.LevelError, false},
	} {
		var buf bytes.Buffer
		l := failure.NewLevelLogger(&buf, tc.level)
		l.Info(context.Background(), "ready", "function", "invoke")
		l.Log(context.Background(), env)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		gotInfo := strings.Contains(buf.String(), `"msg":"ready"`)
		if gotInfo != tc.wantInfo {
			t.Errorf("level %v: info line written = %v, want %v", tc.level, gotInfo, tc.wantInfo)
		}
		checkEMF(t, lines[len(lines)-1])
	}
}
