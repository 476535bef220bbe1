package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/lambdafn"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

const (
	ref    = "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"
	firm   = "5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f"
	run    = "6a1d7e2f-3c4b-4d6e-9fa0-1b2c3d4e5f60"
	matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
)

type outbox struct {
	err  error
	refs []string
}

func (o *outbox) RecordOutbound(_ context.Context, e warrant.Outbound) (bool, error) {
	o.refs = append(o.refs, e.EffectRef)
	return o.err == nil, o.err
}

func payload(tool, input string) json.RawMessage {
	return json.RawMessage(`{"effect_ref":"` + ref + `","firm_id":"` + firm + `","run_id":"` + run + `","matter_id":"` + matter +
		`","tool":"` + tool + `","input":` + input + `}`)
}

func TestHandler(t *testing.T) {
	ob := &outbox{}
	set, err := serve.New(tools.Reference(ob, func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	crashed := 0
	h := lambdafn.Handler(set, failure.NewLogger(&log), func() { crashed++ })
	ctx := context.Background()
	email := `{"matter_id":"` + matter + `","to":"gc@client.example","subject":"Update","body":"Privileged: the settlement figure."}`

	out, err := h(ctx, payload("send_client_email", email))
	if err != nil || !json.Valid(out) || len(ob.refs) != 1 || ob.refs[0] != ref {
		t.Fatalf("send: %s %v (outbox %v)", out, err, ob.refs)
	}
	for name, p := range map[string]json.RawMessage{
		"not an object":    json.RawMessage(`[]`),
		"unknown member":   json.RawMessage(strings.Replace(string(payload("send_client_email", email)), `"tool"`, `"extra":1,"tool"`, 1)),
		"no effect_ref":    json.RawMessage(strings.Replace(string(payload("send_client_email", email)), ref, "", 1)),
		"unknown tool":     payload("wire_funds", email),
		"invalid input":    payload("send_client_email", `{"matter_id":"`+matter+`"}`),
		"another matter":   payload("send_client_email", strings.Replace(email, matter, "9c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99", 1)),
		"duplicate member": payload("send_client_email", `{"to":"a@b.example","to":"c@d.example"}`),
	} {
		_, err := h(ctx, p)
		var r *lambdafn.Refusal
		if !errors.As(err, &r) || r.Text == "" {
			t.Errorf("%s: %v, want a Refusal", name, err)
		}
	}
	if len(ob.refs) != 1 {
		t.Fatalf("refused calls reached the outbox: %v", ob.refs)
	}
	ob.err = errors.New("ProvisionedThroughputExceededException: table warrant")
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a failed tool answered")
			}
		}()
		_, _ = h(ctx, payload("send_client_email", email))
	}()
	if crashed != 1 {
		t.Fatalf("crash called %d times", crashed)
	}
	if strings.Contains(log.String(), "settlement") || strings.Contains(log.String(), "gc@client.example") {
		t.Fatalf("the log holds an input:\n%s", log.String())
	}
}
