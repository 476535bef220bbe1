package contracts

import (
	"errors"
	"testing"
)

func TestDecodeWorkerMessage(t *testing.T) {
	ids := `"firm_id":"` + uFirm + `","run_id":"` + uRun + `"`
	for _, tc := range []struct{ name, in, path string }{
		{"started", `{"schema_version":"1",` + ids + `,"reason":"started"}`, ""},
		{"resumed", `{"schema_version":"1",` + ids + `,"reason":"resumed","approval_request_id":"` + uApprove + `"}`, ""},
		{"restarted with correlation", `{"schema_version":"1",` + ids + `,"reason":"restarted","correlation_id":"` + uUser + `"}`, ""},
		{"resumed without warrant", `{"schema_version":"1",` + ids + `,"reason":"resumed"}`, "approval_request_id"},
		{"started with a warrant", `{"schema_version":"1",` + ids + `,"reason":"started","approval_request_id":"` + uApprove + `"}`, "approval_request_id"},
		{"unknown reason", `{"schema_version":"1",` + ids + `,"reason":"replay"}`, "reason"},
		{"newer schema", `{"schema_version":"2",` + ids + `,"reason":"started"}`, "schema_version"},
		{"bad run id", `{"schema_version":"1","firm_id":"` + uFirm + `","run_id":"r-1","reason":"started"}`, "run_id"},
		{"unknown field", `{"schema_version":"1",` + ids + `,"reason":"started","history":[]}`, "history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeWorkerMessage([]byte(tc.in))
			if tc.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path {
				t.Fatalf("err = %v, want a FieldError at %q", err, tc.path)
			}
		})
	}
}
