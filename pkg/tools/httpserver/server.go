// Package httpserver serves the reference tools as a firm's HTTPS endpoint
// is reached by Warrant's https target (pkg/httpstarget): one POST a call,
// to the tool's name under the server's path, the body the call's input,
// the effect_ref in Idempotency-Key (a Structured Field String, RFC 9651)
// and the run in Warrant-Run (a Dictionary of Strings: firm, run, matter).
// cmd/toolserver serves it beside the MCP endpoint.
//
// Its answers keep the contract a catalog states with final_client_errors:
// a 4xx means the tool did not act, and only then.
//
//	200  the tool ran; the body is its JSON result
//	400  the call names no effect and run (the two header fields), or its
//	     body is not JSON: nothing was done
//	404  no such tool: nothing was done
//	413  the body is over 1 MiB: nothing was done
//	415  the body is not application/json: nothing was done
//	422  the tool refused the input (the schema, another matter, a document
//	     outside the matter): nothing was done
//	500  the tool's own system failed, maybe after it acted: never a 4xx
//
// Every body is JSON; an error's is {"error": "<a fixed text>"}, never an
// echo of the input or of a header.
package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

// Name is the server's name in failure envelopes.
const Name = "warrant-reference-tools-https"

// MaxBody bounds a call's body.
const MaxBody = 1 << 20

// The fixed texts of the refusals this package adds to serve's.
const (
	TextNoScope    = `refused: the call names no effect and run (Idempotency-Key: "<effect_ref>" and Warrant-Run: firm="…", run="…", matter="…", each a lowercase UUID); nothing was done`
	TextNotJSON    = "refused: the body is not application/json; nothing was done"
	TextTooLarge   = "refused: the body is over 1 MiB; nothing was done"
	TextPostOnly   = "only POST calls a tool"
	TextBadRequest = "refused: the body is not one JSON object; nothing was done"
)

// Handler serves the tools of set at /<tool name> (mount it with
// http.StripPrefix under its path). logger gets one line a call (the tool,
// the outcome and the run's ids, never an input or a result) and a failure
// envelope when a tool's system failed; nil logs nothing. A browser's
// cross-origin request is refused.
func Handler(set *serve.Tools, logger *failure.Logger) http.Handler {
	h := handler{set: set, log: logger}
	return http.NewCrossOriginProtection().Handler(http.HandlerFunc(h.serve))
}

type handler struct {
	set *serve.Tools
	log *failure.Logger
}

func (h handler) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, TextPostOnly)
		return
	}
	tool := strings.TrimPrefix(r.URL.Path, "/")
	effectRef, scope, ok := fromHeaders(r.Header)
	if !ok {
		h.info(r.Context(), tool, "refused_no_scope", tools.Scope{})
		answer(w, http.StatusBadRequest, TextNoScope)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
		h.info(r.Context(), tool, "not_json", scope)
		answer(w, http.StatusUnsupportedMediaType, TextNotJSON)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.info(r.Context(), tool, "too_large", scope)
		answer(w, http.StatusRequestEntityTooLarge, TextTooLarge)
		return
	case err != nil:
		return // the client went away before its body arrived: nothing was done
	case !json.Valid(body):
		h.info(r.Context(), tool, "not_json", scope)
		answer(w, http.StatusBadRequest, TextBadRequest)
		return
	}
	o := h.set.Run(r.Context(), tool, effectRef, scope, body)
	h.info(r.Context(), tool, o.Log, scope)
	switch {
	case o.Kind == serve.Refused && o.Text == serve.TextUnknownTool:
		answer(w, http.StatusNotFound, o.Text)
	case o.Kind == serve.Refused:
		answer(w, http.StatusUnprocessableEntity, o.Text)
	case o.Kind == serve.Failed:
		if h.log != nil {
			h.log.Log(r.Context(), failure.Build(o.Err, failure.StageToolExecute, Name+"/"+tool,
				failure.Identity{FirmID: scope.FirmID, RunID: scope.RunID, MatterID: scope.MatterID}))
		}
		answer(w, http.StatusInternalServerError, o.Text)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(o.Result)
	}
}

func answer(w http.ResponseWriter, status int, text string) {
	b, _ := json.Marshal(map[string]string{"error": text})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (h handler) info(ctx context.Context, tool, outcome string, s tools.Scope) {
	if h.log == nil {
		return
	}
	if len(tool) > 64 {
		tool = tool[:64] // a path is the client's: bounded in the log
	}
	h.log.Info(ctx, "tool call", "tool", tool, "outcome", outcome, "firm_id", s.FirmID, "run_id", s.RunID, "matter_id", s.MatterID)
}

// fromHeaders reads the effect and the run from the call's header fields:
// exactly one Idempotency-Key, a String; exactly one Warrant-Run, a
// Dictionary whose members firm, run and matter are Strings (others are
// ignored, as RFC 9651 lets a recipient); each id a lowercase UUID.
func fromHeaders(h http.Header) (effectRef string, s tools.Scope, ok bool) {
	keys, runs := h.Values("Idempotency-Key"), h.Values("Warrant-Run")
	if len(keys) != 1 || len(runs) != 1 {
		return "", tools.Scope{}, false
	}
	effectRef, rest, ok := sfString(strings.TrimSpace(keys[0]))
	if !ok || rest != "" {
		return "", tools.Scope{}, false
	}
	dict, ok := sfDictionary(runs[0])
	if !ok {
		return "", tools.Scope{}, false
	}
	s, ok = serve.Scope(effectRef, dict["firm"], dict["run"], dict["matter"])
	return effectRef, s, ok
}
