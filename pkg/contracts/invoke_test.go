package contracts

import (
	"errors"
	"testing"
)

const (
	uRun     = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	uFirm    = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	uUser    = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	uMatter  = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	uApprove = "7e6d5c4b-3a29-4187-9f6e-5d4c3b2a1908"
	aHash    = "4f1d9e7b2c3a5f6e8d0b1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60"
)

func TestAgentInvokeDecodeAndValidate(t *testing.T) {
	meta := `"meta":{"run_id":"` + uRun + `","firm_id":"` + uFirm + `","user_id":"` + uUser + `","matter_id":"` + uMatter + `"}`
	tests := []struct {
		name, in, path string
	}{
		{"invoke ok", `{"agent_key":"matter_assistant","mode":"invoke",` + meta + `,"history":[{"role":"user","text":"hi"}]}`, ""},
		{"invoke carrying approval", `{"agent_key":"matter_assistant","mode":"invoke",` + meta + `,"history":[],"approval":{}}`, "approval"},
		{"resume is not a command", `{"agent_key":"matter_assistant","mode":"resume",` + meta + `,"history":[]}`, "mode"},
		{"unknown mode", `{"agent_key":"matter_assistant","mode":"replay",` + meta + `,"history":[]}`, "mode"},
		{"unknown role", `{"agent_key":"matter_assistant","mode":"invoke",` + meta + `,"history":[{"role":"system","text":"x"}]}`, "history[0].role"},
		{"empty text", `{"agent_key":"matter_assistant","mode":"invoke",` + meta + `,"history":[{"role":"user","text":""}]}`, "history[0].text"},
		{"missing agent key", `{"agent_key":"","mode":"invoke",` + meta + `,"history":[]}`, "agent_key"},
		{"non-uuid run", `{"agent_key":"a","mode":"invoke","meta":{"run_id":"run-1","firm_id":"` + uFirm + `","user_id":"` + uUser + `"},"history":[]}`, "meta.run_id"},
		{"uppercase uuid", `{"agent_key":"a","mode":"invoke","meta":{"run_id":"5B0C6A2E-7D4F-4C8E-9A51-0B8F2F3C1D01","firm_id":"` + uFirm + `","user_id":"` + uUser + `"},"history":[]}`, "meta.run_id"},
		{"braced uuid", `{"agent_key":"a","mode":"invoke","meta":{"run_id":"{` + uRun + `}","firm_id":"` + uFirm + `","user_id":"` + uUser + `"},"history":[]}`, "meta.run_id"},
		{"bad optional uuid", `{"agent_key":"a","mode":"invoke","meta":{"run_id":"` + uRun + `","firm_id":"` + uFirm + `","user_id":"` + uUser + `","matter_id":"m"},"history":[]}`, "meta.matter_id"},
		{"missing history", `{"agent_key":"a","mode":"invoke",` + meta + `}`, "history"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a AgentInvoke
			err := DecodeStrict([]byte(tc.in), &a)
			if err == nil {
				err = a.Validate()
			}
			if tc.path == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path {
				t.Fatalf("error = %v, want a FieldError at %q", err, tc.path)
			}
		})
	}
}
