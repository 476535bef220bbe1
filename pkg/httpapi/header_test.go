package httpapi_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

func TestHeader(t *testing.T) {
	h := map[string]string{"idempotency-key": "a", "X-Correlation-Id": "b"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"Idempotency-Key", "a", true},
		{"idempotency-key", "a", true},
		{"x-correlation-id", "b", true},
		{"X-CORRELATION-ID", "b", true},
		{"content-type", "", false},
	} {
		if got, ok := httpapi.Header(h, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("Header(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := httpapi.Header(nil, "x"); ok {
		t.Error("a nil map has no headers")
	}
}
