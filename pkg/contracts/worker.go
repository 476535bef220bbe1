package contracts

// WorkerMessage is the worker queue's message body: continue this run. The
// worker reads everything else from the run's item and ledger (never from a
// second copy), so a message says only which run, and why it was sent.
type WorkerMessage struct {
	SchemaVersion string `json:"schema_version"`
	FirmID        string `json:"firm_id"`
	RunID         string `json:"run_id"`
	// Reason is why the run was handed over: started (POST /v1/runs),
	// resumed (POST .../resume, with the warrant), restarted (the sweeper,
	// after a worker was lost with nothing pending), continued (a worker
	// whose invocation had too little time left for the next effect).
	Reason            string `json:"reason"`
	ApprovalRequestID string `json:"approval_request_id,omitempty"`
	CorrelationID     string `json:"correlation_id,omitempty"`
}

// Reasons of a WorkerMessage (closed).
const (
	ReasonStarted   = "started"
	ReasonResumed   = "resumed"
	ReasonRestarted = "restarted"
	ReasonContinued = "continued"
)

// DecodeWorkerMessage strictly decodes and validates a queue message body.
func DecodeWorkerMessage(body []byte) (WorkerMessage, error) {
	var m WorkerMessage
	if err := DecodeStrict(body, &m); err != nil {
		return WorkerMessage{}, err
	}
	return m, m.Validate()
}

// Validate checks the ids, the closed reasons, and that a warrant is named
// exactly by a resumed message.
func (m WorkerMessage) Validate() error {
	if err := oneOf("schema_version", m.SchemaVersion, SchemaVersion); err != nil {
		return err
	}
	if err := CheckUUID("firm_id", m.FirmID); err != nil {
		return err
	}
	if err := CheckUUID("run_id", m.RunID); err != nil {
		return err
	}
	if err := oneOf("reason", m.Reason, ReasonStarted, ReasonResumed, ReasonRestarted, ReasonContinued); err != nil {
		return err
	}
	if m.CorrelationID != "" {
		if err := CheckUUID("correlation_id", m.CorrelationID); err != nil {
			return err
		}
	}
	switch {
	case m.Reason == ReasonResumed:
		return CheckUUID("approval_request_id", m.ApprovalRequestID)
	case m.ApprovalRequestID != "":
		return fieldErr("approval_request_id", "only a resumed message names a warrant")
	}
	return nil
}
