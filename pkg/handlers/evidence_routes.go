package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

var errNoEvidence = failure.New(failure.KindNotFound, "evidence is not configured")

// evidence answers GET /v1/runs/{run_id}/evidence: the run's bundle, or,
// when it would pass what one Lambda answer holds (maxEventsBodyBytes as the
// runtime serializes it), 413 naming how many parts to fetch and how:
// ?checkpoint=N&seq=S&part=K pins the checkpoint and the ledger's end, so
// every part is cut from the same bundle, and evidence.Join (or the jq line
// of docs/EVIDENCE.md) puts them together. seq alone cuts the ledger at line
// S (the head is then left out unless it is at S).
func (h *Runs) evidence(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "checkpoint", "seq", "part"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	at, err := httpapi.QueryInt(req, "checkpoint", 0, 1, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	seq, err := httpapi.QueryInt(req, "seq", 0, 1, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	part, err := httpapi.QueryInt(req, "part", 0, 1, 1<<20)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if part > 0 && seq == 0 {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest,
			"part: a part is cut from a bundle pinned by seq (and checkpoint): ask without part first, and the 413 answer names them"))
	}
	if h.Evidence == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoEvidence
	}
	b, err := h.Evidence.Bundle(ctx, p.FirmID, runID, at)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if seq > 0 {
		if seq > int64(len(b.Ledger)) {
			return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest,
				fmt.Sprintf("seq: the run's ledger has %d lines", len(b.Ledger))))
		}
		b.Ledger = b.Ledger[:seq]
		if b.Head != nil && b.Head.Seq != seq {
			b.Head = nil
		}
	}
	if part == 0 {
		body, err := json.Marshal(b)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if escapedLen(body) <= maxEventsBodyBytes {
			return httpapi.JSON(200, b, id.CorrelationID), nil
		}
	}
	parts, err := evidence.Parts(b, maxEventsBodyBytes, escapedLen)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindInternal, "", err)
	}
	if part == 0 {
		pin := fmt.Sprintf("seq=%d", len(b.Ledger))
		if b.Checkpoint != nil {
			var cp evidence.Checkpoint
			if err := json.Unmarshal([]byte(b.Checkpoint.Body), &cp); err == nil {
				pin = fmt.Sprintf("checkpoint=%d&%s", cp.Number, pin)
			}
		}
		return events.APIGatewayV2HTTPResponse{}, failure.New(failure.KindPayloadTooLarge, fmt.Sprintf(
			"the run's evidence bundle is more than one answer holds (%d bytes): fetch it in %d parts, ?%s&part=1 to ?%s&part=%d, and join them (docs/EVIDENCE.md, \"A bundle in parts\")",
			maxEventsBodyBytes, len(parts), pin, pin, len(parts)))
	}
	if part > int64(len(parts)) {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest,
			fmt.Sprintf("part: the bundle has %d parts", len(parts))))
	}
	return httpapi.JSON(200, parts[part-1], id.CorrelationID), nil
}

// escapedLen is what raw costs in a Lambda answer, which carries the body
// as a JSON string (see escapedLineLen).
func escapedLen(raw []byte) int {
	b, _ := json.Marshal(string(raw)) // a string always encodes
	return len(b) - len(`""`)
}

// ReceiptsView is what the desk shows of a run's evidence: each receipt as it
// reads, and whether the bundle verified against this deployment's keys.
type ReceiptsView struct {
	RunID    string             `json:"run_id"`
	Receipts []evidence.Receipt `json:"receipts"`
	// Verified: the bundle passed evidence.Verify; Checkpoint is the
	// checkpoint it was verified against (0: none yet), Complete whether
	// the run ended with every line covered, Problem what failed.
	Verified   bool   `json:"verified"`
	Checkpoint int64  `json:"checkpoint"`
	Complete   bool   `json:"complete"`
	Problem    string `json:"problem,omitempty"`
}

func (h *Runs) receipts(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	if h.Evidence == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoEvidence
	}
	b, err := h.Evidence.Bundle(ctx, p.FirmID, runID, 0)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	v := ReceiptsView{RunID: runID, Receipts: []evidence.Receipt{}}
	if b.Checkpoint == nil {
		// No checkpoint covers the firm's log yet: awaiting, not a fault.
		return httpapi.JSON(200, v, id.CorrelationID), nil
	}
	rep, verr := evidence.VerifyWith(b, h.Evidence.Keys, evidence.Options{OriginPrefix: h.Evidence.OriginPrefix})
	v.Checkpoint, v.Complete = rep.Checkpoint, rep.Complete
	if verr != nil {
		v.Problem = verr.Error()
		// What the receipts say, each still checked against its signature.
		for _, s := range b.Receipts {
			if r, err := evidence.OpenReceipt(h.Evidence.Keys, s); err == nil {
				v.Receipts = append(v.Receipts, r)
			}
		}
	} else {
		v.Verified, v.Receipts = true, append(v.Receipts, rep.Receipts...)
	}
	return httpapi.JSON(200, v, id.CorrelationID), nil
}

func (h *Runs) firmLog(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "from", "checkpoint"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	from, err := httpapi.QueryInt(req, "from", 1, 1, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	at, err := httpapi.QueryInt(req, "checkpoint", 0, 1, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if h.Evidence == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoEvidence
	}
	lb, err := h.Evidence.LogBundle(ctx, p.FirmID, from, at)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, lb, id.CorrelationID), nil
}

// KeyView is one published public key.
type KeyView struct {
	KeyID        string `json:"key_id"`
	PublicKeyPEM string `json:"public_key_pem"`
	// Signing: receipts and checkpoints are signed with this key now;
	// the others are retired and still verify what they signed.
	Signing bool `json:"signing"`
}

func (h *Runs) keys(req events.APIGatewayV2HTTPRequest, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if h.Evidence == nil {
		return events.APIGatewayV2HTTPResponse{}, errNoEvidence
	}
	out := struct {
		Keys []KeyView `json:"keys"`
	}{Keys: []KeyView{}}
	signing := h.Evidence.Current
	for _, kid := range h.Evidence.Keys.IDs() {
		out.Keys = append(out.Keys, KeyView{KeyID: kid, PublicKeyPEM: h.Evidence.Keys[kid].PEM(), Signing: kid == signing})
	}
	return httpapi.JSON(200, out, id.CorrelationID), nil
}
