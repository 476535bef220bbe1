package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

const (
	ref    = "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"
	firm   = "5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f"
	run    = "6a1d7e2f-3c4b-4d6e-9fa0-1b2c3d4e5f60"
	matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
)

type outbox struct {
	err   error
	calls int
}

func (o *outbox) RecordOutbound(context.Context, warrant.Outbound) (bool, error) {
	o.calls++
	return o.err == nil, o.err
}

func TestRun(t *testing.T) {
	ob := &outbox{}
	set, err := serve.New(tools.Reference(ob, func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }))
	if err != nil {
		t.Fatal(err)
	}
	scope, ok := serve.Scope(ref, firm, run, matter)
	if !ok {
		t.Fatal("a good scope refused")
	}
	for _, bad := range [][4]string{{"", firm, run, matter}, {ref, "firm", run, matter}, {ref, firm, strings.ToUpper(run), matter}} {
		if _, ok := serve.Scope(bad[0], bad[1], bad[2], bad[3]); ok {
			t.Fatalf("scope %v accepted", bad)
		}
	}
	ctx := context.Background()
	email := json.RawMessage(`{"matter_id":"` + matter + `","to":"gc@client.example","subject":"Update","body":"Hello."}`)

	if o := set.Run(ctx, "no_such_tool", ref, scope, email); o.Kind != serve.Refused || o.Text != serve.TextUnknownTool {
		t.Fatalf("unknown tool: %+v", o)
	}
	if o := set.Run(ctx, "send_client_email", ref, scope, json.RawMessage(`{"matter_id":"`+matter+`","secret-key":"x"}`)); o.Kind != serve.Refused ||
		!strings.HasPrefix(o.Text, serve.TextInvalidInput) || strings.Contains(o.Text, "secret-key") {
		t.Fatalf("invalid input: %+v", o)
	}
	if o := set.Run(ctx, "send_client_email", ref, scope, json.RawMessage(`{"a":1,"a":2}`)); o.Kind != serve.Refused || !strings.Contains(o.Text, serve.TextAmbiguous) {
		t.Fatalf("duplicate key: %+v", o)
	}
	if ob.calls != 0 {
		t.Fatalf("a refused call reached the outbox %d times", ob.calls)
	}
	if o := set.Run(ctx, "send_client_email", ref, scope, email); o.Kind != serve.Done || len(o.Result) == 0 || ob.calls != 1 {
		t.Fatalf("send: %+v (outbox %d)", o, ob.calls)
	}
	ob.err = errors.New("throttled")
	if o := set.Run(ctx, "send_client_email", ref, scope, email); o.Kind != serve.Failed || o.Text != serve.TextFailed || o.Err == nil {
		t.Fatalf("failed outbox: %+v", o)
	}
	if _, err := serve.New(append(tools.Reference(ob, nil), tools.Reference(ob, nil)[0])); err == nil {
		t.Fatal("a tool offered twice was accepted")
	}
}
