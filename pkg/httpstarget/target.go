package httpstarget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Target calls the tools of one HTTPS system, each call one POST. It holds
// no connection of its own (its client's transport pools them) and is safe
// for concurrent use.
type Target struct {
	name     string
	base     *url.URL
	final    bool
	maxBytes int64
	auth     remote.Credentials // nil: none
	http     *http.Client
}

// New returns the target for the system cfg describes. It checks cfg and
// opens nothing.
func New(cfg Config) (*Target, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base, _ := url.Parse(cfg.URL) // validate parsed it
	rt := remote.TransportOf(cfg.HTTPClient)
	t := &Target{
		name:     cfg.Name,
		base:     base,
		final:    cfg.FinalClientErrors,
		maxBytes: cfg.MaxResponseBytes,
		auth:     remote.NewCredentials(cfg.Auth, cfg.URL, cfg.Secrets, rt),
	}
	if t.maxBytes == 0 {
		t.maxBytes = DefaultMaxResponseBytes
	}
	t.http = &http.Client{
		Transport:     &remote.Transport{Base: rt, Origin: base, Auth: t.auth},
		CheckRedirect: remote.NoRedirect,
	}
	return t, nil
}

// Call POSTs c.Input to c.Tool's path under the base URL, once (see
// agent.Target for what its errors mean, the package doc for how each
// answer is read). c.SchemaSHA256 is not checked: an https tool's schema is
// the catalog's own, and the endpoint publishes none to compare it with.
func (t *Target) Call(ctx context.Context, c agent.TargetCall) (agent.TargetResult, error) {
	u, err := toolURL(t.base, c.Tool)
	if err != nil {
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, fmt.Sprintf("tool %q refused, nothing sent", c.Tool), err)
	}
	f, err := callFields(c)
	if err != nil {
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, fmt.Sprintf("POST %q: invalid call, nothing sent", c.Tool), err)
	}
	what := fmt.Sprintf("POST %q", c.Tool)
	p := &remote.Probe{}
	req, err := http.NewRequestWithContext(remote.WithProbe(ctx, p), http.MethodPost, u.String(), bytes.NewReader(c.Input))
	if err != nil {
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, what+": not sent", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Warrant-Run", f.warrantRun)
	req.Header.Set("Idempotency-Key", f.idempotencyKey)

	resp, err := t.http.Do(req)
	v := p.Seal()
	switch {
	case err != nil && !v.Sent:
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, what+": not sent", err)
	case err != nil:
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetOutcomeUnknown, what+": no answer after the call was sent", err)
	}
	defer resp.Body.Close()
	status := resp.StatusCode
	switch {
	case status >= 200 && status < 300:
		// A careless endpoint echoes the token: it reaches neither the
		// model nor the ledger.
		res := t.answer(status, resp.Body)
		res.Content = remote.RedactJSON(res.Content, t.auth)
		return res, nil
	case !v.Sent:
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, fmt.Sprintf("%s: HTTP %d before the call was wholly sent; it did not run", what, status), nil)
	case status >= 400 && status < 500 && t.final:
		// A 401 too: the catalog says a 4xx means nothing happened. The
		// refused token was dropped (remote.Transport); the next call
		// reads or fetches a new one, and this one is not made again.
		return agent.TargetResult{Content: statusOnly(status), IsError: true}, nil
	case status >= 300 && status < 400:
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetOutcomeUnknown, fmt.Sprintf("%s: HTTP %d, a redirect (not followed), after the call was sent", what, status), nil)
	case status >= 400 && status < 500:
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetOutcomeUnknown, fmt.Sprintf("%s: HTTP %d after the call was sent, and the server does not say its 4xx answers are final", what, status), nil)
	}
	return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetOutcomeUnknown, fmt.Sprintf("%s: HTTP %d after the call was sent", what, status), nil)
}

// answer reads a 2xx answer's body, at most maxBytes of it, into the
// call's result (see the package doc for each shape).
func (t *Target) answer(status int, body io.Reader) agent.TargetResult {
	b, err := io.ReadAll(io.LimitReader(body, t.maxBytes+1))
	switch {
	case int64(len(b)) > t.maxBytes:
		return agent.TargetResult{Content: marked(status, "answer_too_large")}
	case err != nil:
		return agent.TargetResult{Content: marked(status, "answer_incomplete")}
	}
	b = bytes.Trim(b, " \t\r\n") // JSON's whitespace
	switch {
	case len(b) == 0:
		return agent.TargetResult{Content: statusOnly(status)}
	case json.Valid(b):
		return agent.TargetResult{Content: b}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// A struct of an int and a string always encodes.
	_ = enc.Encode(struct {
		Status int    `json:"http_status"`
		Text   string `json:"text"`
	}{status, string(b)})
	return agent.TargetResult{Content: bytes.TrimRight(buf.Bytes(), "\n")}
}

func statusOnly(status int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"http_status":%d}`, status))
}

func marked(status int, flag string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"http_status":%d,%q:true}`, status, flag))
}
