package lambdalocal

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/rie"
)

// maxPayload is Lambda's limit on a synchronous invocation's request.
const maxPayload = 6 << 20

// invoke serves POST /2015-03-31/functions/{name}/invocations.
func (e *Endpoint) invoke(w http.ResponseWriter, r *http.Request) {
	fn := e.fns[functionName(r.PathValue("name"))]
	if fn == nil {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+r.PathValue("name"))
		return
	}
	if it := r.Header.Get("X-Amz-Invocation-Type"); it != "" && it != "RequestResponse" {
		writeError(w, http.StatusBadRequest, "InvalidParameterValueException", "lambdalocal serves RequestResponse invocations only")
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPayload))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
		return
	case err != nil:
		return // the caller went away before its request was whole: nothing runs
	case len(payload) > 0 && !json.Valid(payload):
		writeError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}

	fault := NoFault
	n := int(fn.requests.Add(1))
	if e.fault != nil {
		fault = e.fault(fn.name, n)
	}
	switch fault {
	case Throttle:
		writeJSON(w, http.StatusTooManyRequests, "TooManyRequestsException", map[string]string{
			"Type": "User", "message": "Rate Exceeded.", "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"})
		return
	case ServiceError:
		writeError(w, http.StatusInternalServerError, "ServiceException", "lambdalocal: an injected service error")
		return
	}

	// The endpoint's context, not the request's: Lambda runs what it
	// accepted, and the emulator is not to see a call abandoned halfway.
	out, err := fn.emu.Invoke(e.ctx, payload)
	if fault == DropAnswer {
		if conn, _, herr := http.NewResponseController(w).Hijack(); herr == nil {
			conn.Close()
		}
		return
	}
	var fe *rie.FunctionError
	switch {
	case errors.As(err, &fe):
		// Lambda answers a function error with 200, the header and the
		// error document. (The emulator answers a failed init 502.)
		body, _ := json.Marshal(errorDocument{Message: fe.Message, Type: fe.Type, StackTrace: fe.StackTrace})
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		writeAnswer(w, body)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "ServiceException", "lambdalocal: the emulator failed")
	default:
		writeAnswer(w, out)
	}
}

// functionName is the function's name in an Invoke path's FunctionName: a
// name, a partial ARN (ACCOUNT:function:NAME) or an ARN, each with an
// optional version or alias (which lambdalocal does not tell apart: each
// function has one build).
func functionName(s string) string {
	parts := strings.Split(s, ":")
	switch {
	case len(parts) >= 7 && parts[0] == "arn":
		return parts[6]
	case len(parts) >= 3 && parts[1] == "function":
		return parts[2]
	}
	return parts[0]
}

// errorDocument is the payload of a function error.
type errorDocument struct {
	Message    string   `json:"errorMessage"`
	Type       string   `json:"errorType"`
	StackTrace []string `json:"stackTrace,omitempty"`
}

// writeAnswer writes a synchronous invocation's 200 with its payload.
func writeAnswer(w http.ResponseWriter, payload []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amz-Executed-Version", "$LATEST")
	h.Set("X-Amzn-RequestId", uuid.NewString())
	w.WriteHeader(http.StatusOK)
	w.Write(payload)
}

// writeError writes an API error in Lambda's JSON shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, code, map[string]string{"Type": "User", "message": message})
}

// writeJSON writes an API error: its code in X-Amzn-ErrorType (where the
// SDK looks first) and body.
func writeJSON(w http.ResponseWriter, status int, code string, body map[string]string) {
	if status >= 500 {
		body["Type"] = "Service"
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-ErrorType", code)
	h.Set("X-Amzn-RequestId", uuid.NewString())
	w.WriteHeader(status)
	w.Write(b)
}
