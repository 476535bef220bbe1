package lambdalocal

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// Stop leaves no process: neither an emulator nor a bootstrap, not even a
// bootstrap caught mid-call, and removes what Start built.
func TestStopLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ep, err := Start(ctx, Options{Functions: map[string]string{
		"a": "./testdata/toolfn",
		"b": "./testdata/toolfn",
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Each emulator starts its bootstrap on its first call; b's is still
	// running one when Stop comes.
	if _, err := ep.fns["a"].emu.Invoke(ctx, []byte(`{"effect_ref":"a","input":{}}`)); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		resp, err := http.Post(ep.URL()+"/2015-03-31/functions/b/invocations", "application/json",
			strings.NewReader(`{"effect_ref":"b","input":{"do":"sleep","sleep_ms":60000}}`))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		slow <- err
	}()
	for len(ep.fns["b"].emu.BootstrapPIDs()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	var pids []int
	for _, fn := range ep.fns {
		pids = append(pids, fn.emu.PIDs()...)
	}
	if len(pids) != 4 {
		t.Fatalf("PIDs %v, want two emulators and two bootstraps", pids)
	}
	tmp := ep.tmp
	if err := ep.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("process %d is still running after Stop", pid)
		}
	}
	if err := <-slow; err == nil {
		t.Error("the call cut by Stop answered")
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the build directory %s is still there: %v", tmp, err)
	}
}
