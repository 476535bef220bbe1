package lambdatarget_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
)

// hugeLambda answers every Invoke 200 with a JSON string of size bytes
// (quotes included), and sends on written how much of it it wrote before
// it was done or the client stopped reading.
func hugeLambda(t *testing.T, size int64, written chan<- int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		chunk := []byte(strings.Repeat("x", 64<<10))
		n, err := io.WriteString(w, `"`)
		total := int64(n)
		for err == nil && total < size-1 {
			n, err = w.Write(chunk[:min(int64(len(chunk)), size-1-total)])
			total += int64(n)
		}
		if err == nil {
			n, _ = io.WriteString(w, `"`)
			total += int64(n)
		}
		written <- total
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Issue 25 G: what a function answers is bounded before the SDK reads it:
// Lambda caps a synchronous answer at 6 MB, so one of 96 MiB is not
// Lambda's; it is read no further than 8 MiB, and as the function ran and
// its answer is lost, the outcome is unknown. The endpoint counts what it
// got to write before the client stopped reading, and the client's
// allocations stay far below the answer's size. An answer of Lambda's
// largest size still comes back whole.
func TestAnswerBounded(t *testing.T) {
	written := make(chan int64, 1)
	srv := hugeLambda(t, 96<<20, written)
	tg, err := lambdatarget.New(lambdatarget.Config{Name: "firm-fns", Function: fnTool, Client: client(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = tg.Call(context.Background(), callFor("huge", `{}`))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) || !strings.Contains(err.Error(), "not read further") {
		t.Errorf("%v, want outcome unknown, the answer too large", err)
	}
	if n := <-written; n >= 48<<20 {
		t.Errorf("the endpoint wrote %d MiB of its answer before the client stopped reading", n>>20)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= 64<<20 {
		t.Errorf("the call allocated %d MiB", alloc>>20)
	}

	const lambdaMax = 6 << 20
	srv = hugeLambda(t, lambdaMax, written)
	tg, err = lambdatarget.New(lambdatarget.Config{Name: "firm-fns", Function: fnTool, Client: client(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tg.Call(context.Background(), callFor("largest", `{}`))
	if err != nil || len(res.Content) != lambdaMax {
		t.Fatalf("an answer of %d bytes: %d bytes back, err %v", lambdaMax, len(res.Content), err)
	}
	<-written
}
