package rie

import (
	"net/http"
	"testing"
)

// The emulator answers an invocation that outlived the function's timeout
// with a 200 and bare text; Invoke reports it as Lambda does, an error of
// type Sandbox.Timedout, and takes no handler payload for one.
func TestTimeoutAnswerIsAFunctionError(t *testing.T) {
	ok := &http.Response{StatusCode: http.StatusOK}
	fe := asTimeout(ok, []byte("Task timed out after 10.00 seconds"))
	if fe == nil || fe.Type != TimeoutErrorType || fe.Message != "Task timed out after 10.00 seconds" {
		t.Fatalf("asTimeout = %+v", fe)
	}
	for _, body := range []string{
		`{"statusCode":200,"body":"Task timed out after 10.00 seconds"}`, // a handler's own answer
		`"Task timed out after 10.00 seconds"`,                           // a JSON string payload
		"Task timed out after",
		"",
	} {
		if fe := asTimeout(ok, []byte(body)); fe != nil {
			t.Errorf("asTimeout(%q) = %+v, want nil", body, fe)
		}
	}
	if fe := asTimeout(&http.Response{StatusCode: http.StatusBadGateway}, []byte("Task timed out after 1.00 seconds")); fe != nil {
		t.Errorf("a 502 is not the timeout answer: %+v", fe)
	}
}
