// Package eventbustest is an EventBridge endpoint on loopback that accepts
// PutEvents (the AWS JSON 1.1 protocol the SDK speaks), keeps every entry and
// can print each as one line: what the local stack "sends", and what tests
// read. It can also refuse entries, as EventBridge reports a failed entry.
package eventbustest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Entry is one accepted event.
type Entry struct {
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
}

// Server is the fake endpoint.
type Server struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []Entry
	// Out, when set, gets one line per accepted event.
	Out io.Writer
	// FailNext, when > 0, reports that many next entries failed
	// (ThrottlingException), without keeping them.
	FailNext int
}

// New starts a server; Close stops it.
func New() *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the endpoint (AWS_ENDPOINT_URL_EVENTBRIDGE / BaseEndpoint).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Entries returns what was accepted, in order.
func (s *Server) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.got...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		http.Error(w, `{"__type":"UnknownOperationException"}`, http.StatusBadRequest)
		return
	}
	var in struct {
		Entries []Entry
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"__type":"ValidationException"}`, http.StatusBadRequest)
		return
	}
	type result struct {
		EventId   string `json:",omitempty"`
		ErrorCode string `json:",omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	s.mu.Lock()
	for i, e := range in.Entries {
		if s.FailNext > 0 {
			s.FailNext--
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "ThrottlingException"})
			continue
		}
		s.got = append(s.got, e)
		out.Entries = append(out.Entries, result{EventId: fmt.Sprintf("local-%d-%d", len(s.got), i)})
		if s.Out != nil {
			fmt.Fprintf(s.Out, "event %s %s %s\n", e.DetailType, e.EventBusName, e.Detail)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}
