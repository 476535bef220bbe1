package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// A body key that is not a short identifier is named by its position; the
// problem and the logged envelope never hold its text.
func TestDecodeBodyDoesNotEchoKeys(t *testing.T) {
	for _, key := range []string{
		"PRIVILEGED" + strings.Repeat("x", 5000),
		"PRIVILEGED: the client admitted backdating the merger documents",
		"PRIVILEGED \"quoted\"\nnon-ASCII é \u202e",
	} {
		kb, _ := json.Marshal(key)
		k := string(kb)
		for _, tc := range []struct{ body, detail string }{
			{`{"name":"a","count":1,` + k + `:1}`, "field $[2]: unknown field"},
			{`{` + k + `:1,` + k + `:1}`, "field $[1]: duplicate key"},
			{`{"name":"a","count":1,"note":{` + k + `:1,` + k + `:1}}`, "field $.note[1]: duplicate key"},
		} {
			var v target
			err := Config{}.DecodeBody(events.APIGatewayV2HTTPRequest{Body: tc.body}, &v)
			var log strings.Builder
			resp := Responder{Logger: failure.NewLogger(&log)}.Error(t.Context(), err, failure.StageRequest,
				failure.Identity{CorrelationID: userID})
			if p := problemOf(t, resp); p.Detail != tc.detail {
				t.Errorf("detail %.100q, want %q", p.Detail, tc.detail)
			}
			if strings.Contains(resp.Body, "PRIVILEGED") || strings.Contains(log.String(), "PRIVILEGED") {
				t.Errorf("key echoed:\n%.300s\n%.300s", resp.Body, log.String())
			}
		}
	}
}

// safeDetail passes a path only when it has the form contracts writes, so a
// FieldError built elsewhere from a client's key cannot carry it out.
func TestSafeDetailPath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"agent_key", "field agent_key: duplicate key"},
		{"payload.x", "field payload.x: duplicate key"},
		{"history[0].role", "field history[0].role: duplicate key"},
		{"[2].a", "field [2].a: duplicate key"},
		{"$[3]", "field $[3]: duplicate key"},
		{"$.history[0][3]", "field $.history[0][3]: duplicate key"},
		{"$.meta[2].x-y", "field $.meta[2].x-y: duplicate key"},
		{"", "invalid JSON: duplicate key"},
		{"PRIVILEGED memo", "invalid JSON: duplicate key"},
		{"a.PRIVILEGED memo", "invalid JSON: duplicate key"},
		{"a." + strings.Repeat("P", 65), "invalid JSON: duplicate key"},
		{"a\nPRIVILEGED", "invalid JSON: duplicate key"},
		{"a[x]", "invalid JSON: duplicate key"},
		{"a[1", "invalid JSON: duplicate key"},
		{"a..b", "invalid JSON: duplicate key"},
		{"$PRIVILEGED", "invalid JSON: duplicate key"},
		{"a.", "invalid JSON: duplicate key"},
	} {
		if got := safeDetail(&contracts.FieldError{Path: tc.path, Reason: "duplicate key"}); got != tc.want {
			t.Errorf("safeDetail(path %.80q) = %.100q, want %q", tc.path, got, tc.want)
		}
	}
}
