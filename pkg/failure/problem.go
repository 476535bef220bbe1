package failure

import (
	"encoding/json"
	"strconv"
)

// ProblemTypeBase prefixes problem "type" URIs. The URIs are stable
// identifiers for clients to switch on (RFC 9457 §3.1.1), not pages that
// are guaranteed to resolve.
const ProblemTypeBase = "https://warrant.dev/problems/"

// Problem is an RFC 9457 application/problem+json body with Warrant's
// extension members.
type Problem struct {
	Type          string `json:"type"`
	Title         string `json:"title"`
	Status        int    `json:"status"`
	Detail        string `json:"detail"`
	Instance      string `json:"instance,omitempty"`
	Kind          Kind   `json:"kind"`
	FailureID     string `json:"failure_id"`
	CorrelationID string `json:"correlation_id"`
	Retryable     bool   `json:"retryable"`
}

// ProblemFrom renders env for an HTTP client. Only fixed texts, ids and the
// envelope's user_visible_message leave the service; Retry-After is set
// exactly when env is retryable.
func ProblemFrom(env Envelope) (status int, headers map[string]string, body []byte) {
	kind := env.FailureKind
	if !kind.Valid() {
		kind = KindInternal
	}
	s := specOf(kind)
	p := Problem{
		Type:          ProblemTypeBase + string(kind),
		Title:         s.title,
		Status:        s.status,
		Detail:        env.UserVisibleMessage,
		Kind:          kind,
		FailureID:     env.FailureID,
		CorrelationID: env.CorrelationID,
		Retryable:     env.Retryable,
	}
	if env.FailureID != "" {
		// The failure id names this occurrence, which is what "instance" is for.
		p.Instance = "urn:uuid:" + env.FailureID
	}
	headers = map[string]string{"Content-Type": "application/problem+json"}
	if env.Retryable {
		headers["Retry-After"] = strconv.Itoa(max(1, env.RetryAfterSeconds))
	}
	// Marshal cannot fail: the struct holds only strings, ints and bools.
	body, _ = json.Marshal(p)
	return s.status, headers, body
}

// UserMessage is the fixed, client-safe message of a kind, for views that show
// a failure recorded earlier (a failed run) rather than one being raised now.
func UserMessage(k Kind) string { return specOf(k).userMsg }
