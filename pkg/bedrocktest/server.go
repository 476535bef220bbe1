package bedrocktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Server is a running fake Bedrock Runtime endpoint.
type Server struct {
	srv    *httptest.Server
	script Script

	mu       sync.Mutex
	fired    []int // per Script.Rules index
	requests []Request
}

// Request is one recorded Converse / ConverseStream call. The embedded
// Conversation carries ModelID, System and Messages.
type Request struct {
	Conversation
	// Path is the request path as sent on the wire (still escaped).
	Path   string
	Stream bool
	// MaxTokens is inferenceConfig.maxTokens, 0 when absent.
	MaxTokens int32
	// ToolNames are the toolSpec names of toolConfig.tools, in order.
	ToolNames []string
	// Rule is the Name of the rule that answered, "" if none did.
	Rule string
	// Body is the raw JSON request body.
	Body []byte
}

// New starts a Server on a random loopback port.
func New(script Script) *Server {
	s := newServer(script)
	s.srv = httptest.NewServer(s.routes())
	return s
}

// NewOn starts a Server listening on addr, which must be a loopback
// host:port (the fake has no auth and must not be reachable off the machine).
func NewOn(addr string, script Script) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("bedrocktest: bad address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("bedrocktest: %q is not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bedrocktest: listen on %s (port in use?): %w", addr, err)
	}
	s := newServer(script)
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: s.routes()}}
	s.srv.Start()
	return s, nil
}

func newServer(script Script) *Server {
	return &Server{script: script, fired: make([]int, len(script.Rules))}
}

// URL is the base URL to use as the SDK's BaseEndpoint.
func (s *Server) URL() string { return s.srv.URL }

// Close shuts the server down, blocking until in-flight requests finish.
func (s *Server) Close() { s.srv.Close() }

// Requests returns a copy of the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls is the number of Converse / ConverseStream requests received,
// including rejected ones; retries show up as extra calls.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{modelId}/converse", s.handle(false))
	mux.HandleFunc("POST /model/{modelId}/converse-stream", s.handle(true))
	return mux
}

func (s *Server) handle(stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			apiError{http.StatusBadRequest, "ValidationException", "unreadable request body"}.write(w)
			return
		}
		req, decodeErr := decodeRequest(body)
		// ServeMux matches on the escaped path and unescapes the wildcard, so
		// an inference profile id's %3A comes back as ':'.
		req.ModelID = r.PathValue("modelId")
		req.Path = r.URL.EscapedPath()
		req.Stream = stream
		req.Body = body

		// Rejections are decided before the script is consulted, so they
		// never spend a rule's Times.
		var reject *apiError
		switch {
		case r.Header.Get("Authorization") == "":
			// Signatures are not verified, but an unsigned request means the
			// client was built without credentials, which Bedrock rejects.
			reject = &apiError{http.StatusForbidden, "AccessDeniedException", "missing Authorization header"}
		case decodeErr != nil:
			reject = &apiError{http.StatusBadRequest, "ValidationException", "malformed request body"}
		case !s.known(req.ModelID):
			reject = &apiError{http.StatusBadRequest, "ValidationException", "The provided model identifier is invalid."}
		}
		reply, ok := s.record(&req, reject == nil)
		switch {
		case reject != nil:
			reject.write(w)
		case !ok:
			apiError{http.StatusBadRequest, "ValidationException", "bedrocktest: no script rule matched"}.write(w)
		default:
			if reply.Delay > 0 {
				// The model thinking: the answer comes after Delay, or
				// never if the caller gives up first.
				select {
				case <-time.After(reply.Delay):
				case <-r.Context().Done():
					return
				}
			}
			s.respond(w, reply, req, stream)
		}
	}
}

func (s *Server) known(modelID string) bool {
	return len(s.script.KnownModels) == 0 || slices.Contains(s.script.KnownModels, modelID)
}

// record appends req and, when match is set, picks the reply under the same
// lock so that Times budgets hold under concurrent calls.
func (s *Server) record(req *Request, match bool) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var reply Reply
	ok := false
	if match {
		reply, ok = s.matchLocked(req)
	}
	s.requests = append(s.requests, *req)
	return reply, ok
}

func (s *Server) matchLocked(req *Request) (Reply, bool) {
	for i, rule := range s.script.Rules {
		if rule.Times > 0 && s.fired[i] >= rule.Times {
			continue
		}
		if rule.When != nil && !rule.When(req.Conversation) {
			continue
		}
		s.fired[i]++
		req.Rule = rule.Name
		return rule.Reply, true
	}
	if s.script.Fallback != nil {
		return *s.script.Fallback, true
	}
	return Reply{}, false
}

// faultErrors are the HTTP-level answers to faults; both routes use them,
// as Bedrock reports these before a stream starts.
var faultErrors = map[Fault]apiError{
	FaultThrottle:           {http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again."},
	FaultModelTimeout:       {http.StatusRequestTimeout, "ModelTimeoutException", "Model has timed out in processing the request."},
	FaultAccessDenied:       {http.StatusForbidden, "AccessDeniedException", "You don't have access to the model with the specified model ID."},
	FaultValidation:         {http.StatusBadRequest, "ValidationException", "The request failed validation."},
	FaultInternal:           {http.StatusInternalServerError, "InternalServerException", "The server encountered an internal error."},
	FaultServiceUnavailable: {http.StatusServiceUnavailable, "ServiceUnavailableException", "The service is unavailable."},
}

func (s *Server) respond(w http.ResponseWriter, reply Reply, req Request, stream bool) {
	if e, ok := faultErrors[reply.Fault]; ok {
		e.write(w)
		return
	}
	if reply.Fault == FaultMidStream && !stream {
		apiError{http.StatusInternalServerError, "InternalServerException", "The model failed while generating."}.write(w)
		return
	}
	a, err := resolve(reply, req)
	if err != nil {
		// A broken script is the test author's bug: fail loudly.
		apiError{http.StatusInternalServerError, "InternalServerException", "bedrocktest: " + err.Error()}.write(w)
		return
	}
	if stream {
		writeStream(w, a, reply.Fault)
		return
	}
	if reply.Fault == FaultMalformedToolUse {
		for i := range a.toolUses {
			a.toolUses[i].Input = json.RawMessage(`"not an object"`)
		}
	}
	writeConverse(w, a)
}

// apiError is a restJson1 error response.
type apiError struct {
	status        int
	code, message string
}

func (e apiError) write(w http.ResponseWriter) {
	// restJson1 clients take the error type from X-Amzn-ErrorType first and
	// look it up in the service's type registry, yielding the modeled
	// *types.<code> error.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": e.message})
}

func writeConverse(w http.ResponseWriter, a answer) {
	var resp wireResponse
	resp.Output.Message = wireMessage{Role: "assistant", Content: []wireContent{}}
	if a.text != "" {
		resp.Output.Message.Content = append(resp.Output.Message.Content, wireContent{Text: &a.text})
	}
	for i := range a.toolUses {
		resp.Output.Message.Content = append(resp.Output.Message.Content, wireContent{ToolUse: &a.toolUses[i]})
	}
	resp.StopReason = a.stopReason
	resp.Usage = a.usage
	resp.Metrics.LatencyMs = fakeLatencyMs
	b, err := json.Marshal(resp)
	if err != nil {
		apiError{http.StatusInternalServerError, "InternalServerException", "bedrocktest: encode response"}.write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// writeStream answers in the AWS event-stream framing ConverseStream uses.
// Like Bedrock, a text block gets no contentBlockStart, a toolUse block gets
// one carrying its id and name, and the tool input arrives as string
// fragments that only form JSON once concatenated.
func writeStream(w http.ResponseWriter, a answer, fault Fault) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	flusher, _ := w.(http.Flusher)
	var buf bytes.Buffer
	send := func(msg eventstream.Message) bool {
		buf.Reset()
		if err := enc.Encode(&buf, msg); err != nil {
			return false
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false // client went away
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	event := func(eventType string, payload any) bool {
		return send(jsonMessage(eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue(eventType)},
		}, payload))
	}
	type obj = map[string]any

	if !event("messageStart", obj{"role": "assistant"}) {
		return
	}
	idx := 0
	text := a.text
	if fault == FaultMidStream && text == "" {
		text = "Partial answer"
	}
	if text != "" {
		for i, chunk := range splitRunes(text, a.chunks) {
			if !event("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"text": chunk}}) {
				return
			}
			if fault == FaultMidStream && i == 0 {
				// Exception events use the lowerCamel union member name of
				// ConverseStreamOutput as :exception-type.
				send(jsonMessage(eventstream.Headers{
					{Name: ":message-type", Value: eventstream.StringValue("exception")},
					{Name: ":exception-type", Value: eventstream.StringValue("modelStreamErrorException")},
				}, obj{"message": "The model stream failed.", "originalStatusCode": 500, "originalMessage": "upstream model error"}))
				return
			}
		}
		if !event("contentBlockStop", obj{"contentBlockIndex": idx}) {
			return
		}
		idx++
	}
	for _, tu := range a.toolUses {
		if !event("contentBlockStart", obj{"contentBlockIndex": idx, "start": obj{"toolUse": obj{"toolUseId": tu.ToolUseID, "name": tu.Name}}}) {
			return
		}
		fragments := splitRunes(string(tu.Input), 2)
		if fault == FaultMalformedToolUse {
			fragments = []string{`{"matter_id": "`, `unterminated`}
		}
		for _, f := range fragments {
			if !event("contentBlockDelta", obj{"contentBlockIndex": idx, "delta": obj{"toolUse": obj{"input": f}}}) {
				return
			}
		}
		if !event("contentBlockStop", obj{"contentBlockIndex": idx}) {
			return
		}
		idx++
	}
	if !event("messageStop", obj{"stopReason": a.stopReason}) {
		return
	}
	event("metadata", obj{"usage": a.usage, "metrics": wireMetrics{LatencyMs: fakeLatencyMs}})
}

func jsonMessage(h eventstream.Headers, payload any) eventstream.Message {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("bedrocktest: encode event payload: %v", err)) // payloads are built here from valid values
	}
	h = append(h, eventstream.Header{Name: ":content-type", Value: eventstream.StringValue("application/json")})
	return eventstream.Message{Headers: h, Payload: b}
}
