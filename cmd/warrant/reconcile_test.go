package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

const effectRef = "8d7c6b5a-4e3f-4a2b-9c1d-0e9f8a7b6c5d"

// TestEffectReconcile: the CLI sends counsel's finding to the API's
// reconcile route with the bearer token and prints the recorded answer; a
// problem answer is an error naming its status, title and kind.
func TestEffectReconcile(t *testing.T) {
	var got struct {
		path, auth, dev string
		body            map[string]string
	}
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth, got.dev = r.Method+" "+r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Dev-Roles")
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got.body)
		if status != http.StatusOK {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"title":"Conflict","status":409,"detail":"the effect is not waiting for reconciliation","kind":"conflict"}`)
			return
		}
		_, _ = io.WriteString(w, `{"run_id":"`+runID+`","effect_ref":"`+effectRef+`","outcome":"executed","external_ref":"SF-1"}`)
	}))
	defer srv.Close()
	t.Setenv("WARRANT_TOKEN", "tok-123")

	r := runCLI("", "effect", "reconcile", runID, effectRef, "--outcome", "executed", "--external-ref", "SF-1",
		"--note", "Clerk confirmed.", "--api", srv.URL+"/", "--header", "X-Dev-Roles: counsel")
	check(t, r, 0, `"external_ref": "SF-1"`, "")
	if got.path != "POST /v1/runs/"+runID+"/effects/"+effectRef+"/reconcile" || got.auth != "Bearer tok-123" || got.dev != "counsel" ||
		got.body["outcome"] != "executed" || got.body["external_ref"] != "SF-1" || got.body["note"] != "Clerk confirmed." {
		t.Fatalf("request %+v", got)
	}

	status = http.StatusConflict
	check(t, runCLI("", "effect", "reconcile", runID, effectRef, "--outcome", "not_executed", "--api", srv.URL),
		1, "", "409 Conflict (conflict): the effect is not waiting for reconciliation")

	for _, args := range [][]string{
		{"effect"},
		{"effect", "reconcile", runID, "--outcome", "executed", "--api", srv.URL},
		{"effect", "reconcile", runID, "not-a-uuid", "--outcome", "executed", "--api", srv.URL},
		{"effect", "reconcile", runID, effectRef, "--outcome", "maybe", "--api", srv.URL},
		{"effect", "reconcile", runID, effectRef, "--outcome", "executed", "--api", "ftp://x"},
		{"effect", "reconcile", runID, effectRef, "--outcome", "executed", "--api", srv.URL, "--header", "no-colon"},
	} {
		if r := runCLI("", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, r.code, r.stderr)
		}
	}
}
