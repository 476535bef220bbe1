package mcp_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// Issue 25 G: what a server answers is bounded before it is decoded. A
// 96 MiB answer to a tools/call, as JSON or as one SSE event, is read no
// further than MaxResponseBytes: the call ran and its answer is lost, so
// the outcome is unknown. The server counts what it got to write before the
// client stopped reading (the kernel's socket buffers hold a few MiB of
// it), and the client's allocations during the call stay far below the
// answer's size (reading it whole once took 2.2 GiB).
func TestAnswerBounded(t *testing.T) {
	for _, tool := range []string{"huge_json", "huge_sse"} {
		t.Run(tool, func(t *testing.T) {
			srv := newServer(t, serverOptions{})
			tg := newTarget(t, mcp.Config{URL: srv.URL})
			ctx := context.Background()
			if _, err := tg.Tools(ctx); err != nil { // a session and a list in hand
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := tg.Call(ctx, call(tool, anySchema, `{}`))
			runtime.ReadMemStats(&after)
			if got := class(err); got != "unknown" {
				t.Errorf("error class = %s, want unknown; err: %v", got, err)
			}
			if err != nil && !strings.Contains(err.Error(), "not read further") {
				t.Errorf("error %q does not say the answer was too large", err)
			}
			written := <-srv.huge
			if written >= 32<<20 {
				t.Errorf("the server wrote %d MiB of its answer before the client stopped reading", written>>20)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= 64<<20 {
				t.Errorf("the call allocated %d MiB", alloc>>20)
			} else {
				t.Logf("the server wrote %d KiB; the call allocated %d KiB", written>>10, alloc>>10)
			}
			if n := srv.arrivals(tool); n != 1 {
				t.Errorf("the tools/call arrived %d times, want once", n)
			}
		})
	}
}
