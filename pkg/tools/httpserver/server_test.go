package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/httpserver"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

const (
	firm   = "5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f"
	run    = "6a1d7e2f-3c4b-4d6e-9fa0-1b2c3d4e5f60"
	matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
)

// outbox records each effect once per effect_ref, as the table does.
type outbox struct {
	mu   sync.Mutex
	err  error
	refs map[string]int
}

func (o *outbox) RecordOutbound(_ context.Context, e warrant.Outbound) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return false, o.err
	}
	o.refs[e.EffectRef]++
	return o.refs[e.EffectRef] == 1, nil
}

func serveTools(t *testing.T, ob *outbox) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	set, err := serve.New(tools.Reference(ob, func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	mux := http.NewServeMux()
	mux.Handle("/https/", http.StripPrefix("/https", httpserver.Handler(set, failure.NewLogger(&log))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &log
}

func target(t *testing.T, url string) *httpstarget.Target {
	t.Helper()
	tg, err := httpstarget.New(httpstarget.Config{Name: "reference", URL: url + "/https/", Auth: remote.Auth{Kind: remote.AuthNone}, FinalClientErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

const email = `{"body":"Privileged: the settlement figure.","matter_id":"` + matter + `","subject":"Update","to":"gc@client.example"}`

// The https target and the reference endpoint agree: the effect runs once
// per effect_ref, a refusal is a tool error (the endpoint's 4xx are final),
// and a failure of the tool's own system is an outcome to reconcile.
func TestThroughTheHTTPSTarget(t *testing.T) {
	ob := &outbox{refs: map[string]int{}}
	srv, log := serveTools(t, ob)
	tg := target(t, srv.URL)
	ctx := context.Background()
	call := agent.TargetCall{Tool: "send_client_email", Input: json.RawMessage(email), EffectRef: "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f",
		FirmID: firm, RunID: run, MatterID: matter}

	for i := 0; i < 2; i++ {
		res, err := tg.Call(ctx, call)
		if err != nil || res.IsError || !json.Valid(res.Content) {
			t.Fatalf("call %d: %s %v", i, res.Content, err)
		}
	}
	if ob.refs[call.EffectRef] != 2 {
		t.Fatalf("outbox %v", ob.refs) // two deliveries of one effect_ref: the outbox keeps one
	}
	for name, c := range map[string]agent.TargetCall{
		"unknown tool":   {Tool: "wire_funds", Input: call.Input, EffectRef: call.EffectRef, FirmID: firm, RunID: run, MatterID: matter},
		"invalid input":  {Tool: call.Tool, Input: json.RawMessage(`{"matter_id":"` + matter + `"}`), EffectRef: call.EffectRef, FirmID: firm, RunID: run, MatterID: matter},
		"another matter": {Tool: call.Tool, Input: json.RawMessage(strings.Replace(email, matter, "9c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99", 1)), EffectRef: call.EffectRef, FirmID: firm, RunID: run, MatterID: matter},
		"no matter":      {Tool: call.Tool, Input: call.Input, EffectRef: call.EffectRef, FirmID: firm, RunID: run},
		"not a uuid":     {Tool: call.Tool, Input: call.Input, EffectRef: "ref-1", FirmID: firm, RunID: run, MatterID: matter},
	} {
		res, err := tg.Call(ctx, c)
		if err != nil || !res.IsError {
			t.Errorf("%s: %s %v, want a tool error", name, res.Content, err)
		}
	}
	if len(ob.refs) != 1 {
		t.Fatalf("refused calls reached the outbox: %v", ob.refs)
	}
	ob.err = errors.New("ProvisionedThroughputExceededException")
	call.EffectRef = "1c2d3e4f-5061-4728-9930-4b5c6d7e8f90"
	if _, err := tg.Call(ctx, call); !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("a failed tool: %v, want the outcome unknown", err)
	}
	if strings.Contains(log.String(), "settlement") || strings.Contains(log.String(), "gc@client.example") {
		t.Fatalf("the log holds an input:\n%s", log.String())
	}
}

// The header fields are read strictly: anything but one String key and one
// Dictionary of Strings naming the run is refused, nothing done.
func TestHeadersRefused(t *testing.T) {
	ob := &outbox{refs: map[string]int{}}
	srv, _ := serveTools(t, ob)
	good := map[string]string{
		"Content-Type":    "application/json",
		"Idempotency-Key": `"0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"`,
		"Warrant-Run":     `firm="` + firm + `", run="` + run + `", matter="` + matter + `"`,
	}
	post := func(edit func(h http.Header), method string) int {
		req, _ := http.NewRequest(method, srv.URL+"/https/send_client_email", strings.NewReader(email))
		for k, v := range good {
			req.Header.Set(k, v)
		}
		if edit != nil {
			edit(req.Header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, tc := range map[string]struct {
		edit   func(h http.Header)
		method string
		want   int
	}{
		"unquoted key":       {func(h http.Header) { h.Set("Idempotency-Key", "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f") }, "POST", 400},
		"two keys":           {func(h http.Header) { h.Add("Idempotency-Key", `"1c2d3e4f-5061-4728-9930-4b5c6d7e8f90"`) }, "POST", 400},
		"no run":             {func(h http.Header) { h.Del("Warrant-Run") }, "POST", 400},
		"token, not string":  {func(h http.Header) { h.Set("Warrant-Run", "firm="+firm+", run="+run) }, "POST", 400},
		"duplicate member":   {func(h http.Header) { h.Set("Warrant-Run", good["Warrant-Run"]+`, run="`+run+`"`) }, "POST", 400},
		"trailing comma":     {func(h http.Header) { h.Set("Warrant-Run", good["Warrant-Run"]+",") }, "POST", 400},
		"parameters":         {func(h http.Header) { h.Set("Warrant-Run", good["Warrant-Run"]+`;x=1`) }, "POST", 400},
		"not json":           {func(h http.Header) { h.Set("Content-Type", "text/plain") }, "POST", 415},
		"a GET":              {nil, "GET", 405},
		"extra member is ok": {func(h http.Header) { h.Set("Warrant-Run", good["Warrant-Run"]+`, tenant="x"`) }, "POST", 200},
	} {
		if got := post(tc.edit, tc.method); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
	if ob.refs["0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"] != 1 {
		t.Fatalf("outbox %v: only the good call may record", ob.refs)
	}
}
