package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// InvokePath is the emulator's invoke route (the Lambda Invoke API's).
const InvokePath = "/2015-03-31/functions/function/invocations"

// FunctionError is an invocation the function (or its runtime) answered with
// an error document, {"errorMessage", "errorType"}: a handler that returned
// an error, a panic, a bootstrap that exited (Runtime.ExitError), or an
// invocation that outlived the function's timeout (TimeoutErrorType).
type FunctionError struct {
	Type       string   `json:"errorType"`
	Message    string   `json:"errorMessage"`
	StackTrace []string `json:"stackTrace,omitempty"`
	// Status is the emulator's HTTP status (200 for a handler error, 502
	// for a failed init).
	Status int `json:"-"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error %s: %s", e.Type, e.Message)
}

// TimeoutErrorType is Lambda's errorType for an invocation that ran past the
// function's timeout.
const TimeoutErrorType = "Sandbox.Timedout"

// Invoke sends payload to the function and returns its response payload.
// Calls are queued: the emulator never sees two at once. A function error
// is a *FunctionError; ctx bounds the wait in the queue and the call.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("rie: %s: invoke: %w", e.name, ctx.Err())
	}
	defer func() { <-e.sem }()
	defer e.noteChildren()
	select {
	case <-e.done:
		return nil, fmt.Errorf("rie: %s: invoke: emulator is not running (%v)", e.name, e.waitErr)
	default:
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL(), bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: invoke: %w", e.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: invoke: read response: %w", e.name, err)
	}
	if fe := asFunctionError(resp, body); fe != nil {
		return nil, fe
	}
	if fe := asTimeout(resp, body); fe != nil {
		return nil, fe
	}
	if resp.StatusCode == http.StatusBadGateway && len(bytes.TrimSpace(body)) == 0 {
		// The emulator's answer when the bootstrap exited (during init or the
		// invocation) without posting an error: its log says why.
		return nil, e.exitError()
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rie: %s: invoke: emulator answered %d: %s", e.name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// exitError describes a bootstrap that exited, from the emulator's log.
func (e *Emulator) exitError() *FunctionError {
	fe := &FunctionError{Type: "Runtime.ExitError", Status: http.StatusBadGateway,
		Message: "the function exited (emulator answered 502); see its log"}
	// Let the emulator finish logging the failure.
	time.Sleep(50 * time.Millisecond)
	for _, l := range strings.Split(e.LogTail(16<<10), "\n") {
		if _, after, ok := strings.Cut(l, "[ERROR] (rapid) "); ok {
			fe.Message = strings.TrimSpace(after)
			break // the first error is the cause; later ones follow from it
		}
	}
	return fe
}

// asFunctionError recognizes the Lambda error document: a JSON object whose
// only members are errorMessage, errorType and stackTrace. A handler's own
// payload (an API Gateway response, a batch response) never has that shape.
func asFunctionError(resp *http.Response, body []byte) *FunctionError {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	_, hasType := m["errorType"]
	_, hasMsg := m["errorMessage"]
	if !hasType && !hasMsg {
		return nil
	}
	for k := range m {
		if k != "errorType" && k != "errorMessage" && k != "stackTrace" {
			return nil
		}
	}
	fe := &FunctionError{Status: resp.StatusCode}
	if json.Unmarshal(body, fe) != nil {
		fe = &FunctionError{Status: resp.StatusCode, Message: string(body)}
	}
	if fe.Type == "" {
		fe.Type = resp.Header.Get("X-Amz-Function-Error")
	}
	return fe
}

// asTimeout recognizes the emulator's answer to an invocation that ran past
// AWS_LAMBDA_FUNCTION_TIMEOUT: a 200 whose body is the bare text "Task timed
// out after N.00 seconds". Lambda answers the same invocation with an error
// (X-Amz-Function-Error, errorType Sandbox.Timedout), which is what callers
// must see: as a payload, the text would pass for the function's answer.
func asTimeout(resp *http.Response, body []byte) *FunctionError {
	msg := string(bytes.TrimSpace(body))
	rest, ok := strings.CutPrefix(msg, "Task timed out after ")
	if resp.StatusCode != http.StatusOK || !ok || !strings.HasSuffix(rest, " seconds") {
		return nil
	}
	return &FunctionError{Type: TimeoutErrorType, Message: msg, Status: resp.StatusCode}
}
