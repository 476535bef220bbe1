package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// headerList is a repeatable --header "Name: value".
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q is not Name: value", v)
	}
	*h = append(*h, v)
	return nil
}

// reconcileCmd records counsel's reconciliation of an effect whose outcome
// was lost, through the API (POST /v1/runs/{run}/effects/{ref}/reconcile):
// the caller is counsel by the API's own authorization, so the CLI holds no
// key to the table and asserts no identity of its own.
func reconcileCmd(args []string, stdout io.Writer) error {
	fs := newFlags("effect reconcile")
	api := fs.String("api", os.Getenv("WARRANT_API"), "API base `URL` (default $WARRANT_API)")
	outcome := fs.String("outcome", "", "what happened: executed or not_executed")
	ref := fs.String("external-ref", "", "the downstream system's `REFERENCE` (required when executed)")
	note := fs.String("note", "", "counsel's note")
	tokenFile := fs.String("token-file", "", "`FILE` holding the bearer token (default $WARRANT_TOKEN)")
	var headers headerList
	fs.Var(&headers, "header", "extra request `HEADER` \"Name: value\" (repeatable; the local stack's X-Dev-* identity)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr("effect reconcile needs RUN_ID and EFFECT_REF")
	}
	for i, name := range []string{"RUN_ID", "EFFECT_REF"} {
		if contracts.CheckUUID(name, pos[i]) != nil {
			return usageErr("%s must be a canonical lowercase UUID", name)
		}
	}
	if *outcome != "executed" && *outcome != "not_executed" {
		return usageErr("--outcome must be executed or not_executed")
	}
	base, err := url.Parse(*api)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return usageErr("--api must be the API's http(s) base URL")
	}
	token := os.Getenv("WARRANT_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		token = strings.TrimSpace(string(b))
	}
	body, _ := json.Marshal(map[string]string{"outcome": *outcome, "external_ref": *ref, "note": *note})
	u := strings.TrimSuffix(base.String(), "/") + "/v1/runs/" + pos[0] + "/effects/" + pos[1] + "/reconcile"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var p struct{ Title, Detail, Kind string }
		if json.Unmarshal(answer, &p) == nil && p.Title != "" {
			return fmt.Errorf("reconcile: %d %s (%s): %s", resp.StatusCode, p.Title, p.Kind, p.Detail)
		}
		return fmt.Errorf("reconcile: HTTP %d", resp.StatusCode)
	}
	var v any
	if err := json.Unmarshal(answer, &v); err != nil {
		return fmt.Errorf("reconcile: the answer is not JSON: %w", err)
	}
	return writeJSON(stdout, v)
}
