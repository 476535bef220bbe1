package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// A matter's legal hold and its destruction on instruction (issue 26): the
// writes on the approve function (as counsel's decisions), the read on the
// runs function.
const (
	PutHoldRoute     = "PUT /v1/matters/{matter_id}/hold"
	DeleteHoldRoute  = "DELETE /v1/matters/{matter_id}/hold"
	GetHoldRoute     = "GET /v1/matters/{matter_id}/hold"
	DestroyRoute     = "POST /v1/matters/{matter_id}/destroy"
	destroyMargin    = 5 * time.Second // of the function's deadline, kept for the answer
	maxRunsNamedBack = 5
)

// HoldStore is what the hold and destruction routes need of the store
// (pkg/dynamo's Store).
type HoldStore interface {
	GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error)
	RunsOfMatter(ctx context.Context, firm, matter string) ([]warrant.Run, error)
	PutHold(ctx context.Context, h warrant.Hold) (warrant.Hold, error)
	GetHold(ctx context.Context, firm, matter string) (warrant.Hold, error)
	ReleaseHold(ctx context.Context, firm, matter string, r warrant.HoldEvent) error
	HoldHistory(ctx context.Context, firm, matter string) ([]warrant.HoldEvent, error)
	GetDestructionOrder(ctx context.Context, firm, matter string) (warrant.DestructionOrder, error)
	RequestDestruction(ctx context.Context, o warrant.DestructionOrder) (warrant.DestructionOrder, error)
	ConfirmDestruction(ctx context.Context, firm, matter, by, byName string) (warrant.DestructionOrder, error)
}

// OrderCarrier carries out a confirmed destruction order (*agent.Shredder).
type OrderCarrier interface {
	CarryOut(ctx context.Context, o warrant.DestructionOrder, deadline time.Time) (agent.OrderResult, error)
}

// ReasonBody is the body of PUT and DELETE /v1/matters/{matter_id}/hold
// and POST /v1/matters/{matter_id}/destroy: why the hold is placed
// (required) or lifted (optional); the instruction a destruction carries
// out (required of the request; the confirmation may repeat it or send
// none).
type ReasonBody struct {
	Reason string `json:"reason,omitempty"`
}

// HoldView is a legal hold in place: who placed it (user id, and the name
// their token carried), when, and why.
type HoldView struct {
	PlacedBy     string `json:"placed_by"`
	PlacedByName string `json:"placed_by_name,omitempty"`
	PlacedAt     string `json:"placed_at"`
	Reason       string `json:"reason"`
}

// HoldEventView is one placement or release of a matter's hold.
type HoldEventView struct {
	Action string `json:"action"` // placed or released
	By     string `json:"by"`
	ByName string `json:"by_name,omitempty"`
	At     string `json:"at"`
	Reason string `json:"reason,omitempty"`
}

// HoldStatus is a matter's legal hold as GET (and PUT, DELETE) answer it:
// whether it is on hold, the hold, its whole history (oldest first), and
// the matter's last destruction order, if any.
type HoldStatus struct {
	MatterID    string           `json:"matter_id"`
	OnHold      bool             `json:"on_hold"`
	Hold        *HoldView        `json:"hold,omitempty"`
	History     []HoldEventView  `json:"history"`
	Destruction *DestructionView `json:"destruction,omitempty"`
}

// DestructionView is a matter's destruction order: requested by one user
// (with the instruction's reason), confirmed by another counsel before
// expires_at, then carried out run by run until done. Destroyed,
// AlreadyDestroyed and NotEnded are the runs of the matter this answer
// dealt with (NotEnded are left as they are: an order covers runs that
// ended); Remaining is set when the sweeper finishes the rest.
type DestructionView struct {
	MatterID         string   `json:"matter_id"`
	Status           string   `json:"status"`
	Reason           string   `json:"reason"`
	RequestedBy      string   `json:"requested_by"`
	RequestedByName  string   `json:"requested_by_name,omitempty"`
	RequestedAt      string   `json:"requested_at"`
	ExpiresAt        string   `json:"expires_at"`
	ConfirmedBy      string   `json:"confirmed_by,omitempty"`
	ConfirmedByName  string   `json:"confirmed_by_name,omitempty"`
	ConfirmedAt      string   `json:"confirmed_at,omitempty"`
	DoneAt           string   `json:"done_at,omitempty"`
	Runs             int      `json:"runs_to_destroy,omitempty"`
	Destroyed        []string `json:"destroyed,omitempty"`
	AlreadyDestroyed []string `json:"already_destroyed,omitempty"`
	NotEnded         []string `json:"not_ended,omitempty"`
	Remaining        bool     `json:"remaining,omitempty"`
}

func orderView(o warrant.DestructionOrder) *DestructionView {
	v := &DestructionView{MatterID: o.MatterID, Status: o.Status, Reason: o.Reason, RequestedBy: o.RequestedBy, RequestedByName: o.RequestedByName,
		RequestedAt: contracts.FormatTime(o.RequestedAt), ExpiresAt: contracts.FormatTime(o.ExpiresAt),
		ConfirmedBy: o.ConfirmedBy, ConfirmedByName: o.ConfirmedByName}
	if !o.ConfirmedAt.IsZero() {
		v.ConfirmedAt = contracts.FormatTime(o.ConfirmedAt)
	}
	if !o.DoneAt.IsZero() {
		v.DoneAt = contracts.FormatTime(o.DoneAt)
	}
	return v
}

// matterOfFirm checks the path's matter is one of the caller's firm: it
// has a record in the registry or runs. Another firm's matter (its key
// carries that firm) is neither, so it is not found.
func matterOfFirm(ctx context.Context, store HoldStore, req events.APIGatewayV2HTTPRequest, p httpapi.Principal) (string, []warrant.Run, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return "", nil, inRequest(err)
	}
	matterID, err := httpapi.PathUUID(req, "matter_id")
	if err != nil {
		return "", nil, inRequest(err)
	}
	if !keepsMatters(p) {
		return "", nil, errNotMatterKeeper
	}
	runs, err := store.RunsOfMatter(ctx, p.FirmID, matterID)
	if err != nil {
		return "", nil, err
	}
	if len(runs) == 0 {
		if _, err := store.GetMatter(ctx, p.FirmID, matterID); errors.Is(err, warrant.ErrNotFound) {
			return "", nil, failure.Wrap(failure.KindNotFound, fmt.Sprintf("matter %s: no record and no runs in your firm", matterID), err)
		} else if err != nil {
			return "", nil, err
		}
	}
	return matterID, runs, nil
}

// matterAndReason reads a write to a matter of the caller's firm (see
// matterOfFirm) and its body's reason (required or not, at most max
// characters); an empty body is no reason when none is required.
func matterAndReason(ctx context.Context, store HoldStore, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal,
	required bool, max int) (string, []warrant.Run, string, error) {
	matter, runs, err := matterOfFirm(ctx, store, req, p)
	if err != nil {
		return "", nil, "", err
	}
	var body ReasonBody
	if req.Body != "" || required {
		if err := c.DecodeBody(req, &body); err != nil {
			return "", nil, "", inRequest(err)
		}
	}
	if err := reasonOf(body.Reason, required, max); err != nil {
		return "", nil, "", err
	}
	return matter, runs, body.Reason, nil
}

// reasonOf checks a reason: text of at most max characters, required or not.
func reasonOf(reason string, required bool, max int) error {
	switch {
	case required && strings.TrimSpace(reason) == "":
		return inRequest(failure.New(failure.KindInvalidRequest, "field reason: required"))
	case !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > max:
		return inRequest(failure.New(failure.KindInvalidRequest, fmt.Sprintf("field reason: at most %d characters of text", max)))
	}
	return nil
}

// holdStatus reads a matter's hold, its history and its last order.
func holdStatus(ctx context.Context, store HoldStore, firm, matter string) (HoldStatus, error) {
	out := HoldStatus{MatterID: matter, History: []HoldEventView{}}
	h, err := store.GetHold(ctx, firm, matter)
	switch {
	case err == nil:
		out.OnHold = true
		out.Hold = &HoldView{PlacedBy: h.By, PlacedByName: h.ByName, PlacedAt: contracts.FormatTime(h.PlacedAt), Reason: h.Reason}
	case !errors.Is(err, warrant.ErrNotFound):
		return out, err
	}
	evs, err := store.HoldHistory(ctx, firm, matter)
	if err != nil {
		return out, err
	}
	for _, e := range evs {
		out.History = append(out.History, HoldEventView{Action: e.Action, By: e.By, ByName: e.ByName, At: contracts.FormatTime(e.At), Reason: e.Reason})
	}
	o, err := store.GetDestructionOrder(ctx, firm, matter)
	switch {
	case err == nil:
		out.Destruction = orderView(o)
	case !errors.Is(err, warrant.ErrNotFound):
		return out, err
	}
	return out, nil
}

// getHold answers GET /v1/matters/{matter_id}/hold (counsel or a firm
// admin).
func getHold(ctx context.Context, store HoldStore, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matter, _, err := matterOfFirm(ctx, store, req, p)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	st, err := holdStatus(ctx, store, p.FirmID, matter)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, st, id.CorrelationID), nil
}

// putHold places a legal hold on a matter of the caller's firm (counsel or
// a firm admin), for a reason: 201 with the matter's hold status. While it
// is in place no run of the matter loses its content, whatever races it.
// A matter already on hold keeps its hold: the same user placing it again
// for the same reason (a retry) gets 200, anyone else 409 naming who
// placed it and when; nothing is written.
func putHold(ctx context.Context, store HoldStore, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matter, _, reason, err := matterAndReason(ctx, store, c, req, p, true, warrant.MaxHoldReason)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	status := 201
	cur, err := store.PutHold(ctx, warrant.Hold{FirmID: p.FirmID, MatterID: matter, By: p.UserID, ByName: p.Name, Reason: reason})
	switch {
	case errors.Is(err, warrant.ErrMatterOnHold) && cur.By == p.UserID && cur.Reason == reason:
		status = 200
	case errors.Is(err, warrant.ErrMatterOnHold):
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindConflict,
			fmt.Sprintf("matter %s is already on hold since %s, placed by %s: its hold stays as placed", matter, contracts.FormatTime(cur.PlacedAt), who(cur.By, cur.ByName)), err)
	case err != nil:
		return events.APIGatewayV2HTTPResponse{}, err
	}
	st, err := holdStatus(ctx, store, p.FirmID, matter)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(status, st, id.CorrelationID), nil
}

// deleteHold lifts a matter's hold (counsel or a firm admin; a reason is
// recorded when given): 200 with the matter's hold status. A matter not on
// hold is 409, nothing written.
func deleteHold(ctx context.Context, store HoldStore, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matter, _, reason, err := matterAndReason(ctx, store, c, req, p, false, warrant.MaxHoldReason)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	err = store.ReleaseHold(ctx, p.FirmID, matter, warrant.HoldEvent{By: p.UserID, ByName: p.Name, Reason: reason})
	if errors.Is(err, warrant.ErrNotFound) {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindConflict, fmt.Sprintf("matter %s is not on hold", matter), err)
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	st, err := holdStatus(ctx, store, p.FirmID, matter)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, st, id.CorrelationID), nil
}

func who(id, name string) string {
	if name != "" {
		return name + " (" + id + ")"
	}
	return id
}

// destroy answers POST /v1/matters/{matter_id}/destroy, two people's act:
// the first call (counsel or a firm admin, with the instruction's reason)
// requests the destruction of every ended run's content of the matter
// (202, status requested; it waits 24 hours for confirmation); the same
// call by another counsel confirms it, and the content is destroyed run by
// run (200, status done; 202 confirmed with remaining when the sweeper
// must finish). Each destruction removes the run's data key and appends
// its content.destroyed line, whose receipt goes to the firm log.
//
// The requester sending their request again for the same reason while it
// waits (a retry whose answer was lost) gets it again (202), nothing
// written.
//
// Refusals, nothing written: a matter on hold (409), a matter with nothing
// left to destroy (409: every ended run's content already destroyed), a
// run of the matter still running or held (409, naming it), a request
// waiting for someone else (409) or one's own request confirmed by
// oneself (403 self_approval), a confirmation by a firm admin who is not
// counsel (403), another firm's matter (404).
func destroy(ctx context.Context, store HoldStore, shred OrderCarrier, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matter, runs, reason, err := matterAndReason(ctx, store, c, req, p, false, warrant.MaxDestructionReason)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	body := ReasonBody{Reason: reason}
	if h, err := store.GetHold(ctx, p.FirmID, matter); err == nil {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindConflict, fmt.Sprintf(
			"matter %s is on hold since %s, placed by %s: no run of it loses its content until the hold is lifted", matter,
			contracts.FormatTime(h.PlacedAt), who(h.By, h.ByName)), warrant.ErrMatterOnHold)
	} else if !errors.Is(err, warrant.ErrNotFound) {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	o, err := store.GetDestructionOrder(ctx, p.FirmID, matter)
	if err != nil && !errors.Is(err, warrant.ErrNotFound) {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if err == nil && o.Status == warrant.OrderConfirmed && o.ConfirmedBy == p.UserID {
		return carryOut(ctx, shred, o, id) // the confirmer again (a retry, or to finish it now)
	}
	var toDestroy int
	var notEnded []string
	for _, r := range runs {
		switch {
		case !r.ContentDestroyedAt.IsZero() || len(r.DataKey) == 0:
		case !r.Status.Terminal():
			notEnded = append(notEnded, r.RunID)
		default:
			toDestroy++
		}
	}
	if len(notEnded) > 0 {
		return events.APIGatewayV2HTTPResponse{}, failure.New(failure.KindConflict, fmt.Sprintf(
			"matter %s has %d run(s) still running or held (%s): a destruction covers runs that ended; let them end (decline or let their warrants expire) and ask again",
			matter, len(notEnded), strings.Join(notEnded[:min(len(notEnded), maxRunsNamedBack)], ", ")))
	}
	if toDestroy == 0 && !(err == nil && o.Status == warrant.OrderConfirmed) {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindConflict, fmt.Sprintf(
			"matter %s has nothing left to destroy: the content of every one of its %d run(s) was destroyed already (or was never sealed)", matter, len(runs)),
			warrant.ErrContentDestroyed)
	}
	live := err == nil && (o.Status == warrant.OrderConfirmed || (o.Status == warrant.OrderRequested && !o.ExpiresAt.Before(time.Now())))
	if !live {
		if err := reasonOf(body.Reason, true, warrant.MaxDestructionReason); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		o, err := store.RequestDestruction(ctx, warrant.DestructionOrder{FirmID: p.FirmID, MatterID: matter, RequestedBy: p.UserID,
			RequestedByName: p.Name, Reason: body.Reason})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, orderError(matter, o, err)
		}
		v := orderView(o)
		v.Runs = toDestroy
		return httpapi.JSON(202, v, id.CorrelationID), nil
	}
	if o.Status == warrant.OrderRequested && o.RequestedBy == p.UserID && body.Reason == o.Reason {
		// The requester's request again, for the same reason: a retry
		// whose answer was lost. It gets the order as it stands.
		v := orderView(o)
		v.Runs = toDestroy
		return httpapi.JSON(202, v, id.CorrelationID), nil
	}
	if o.Status == warrant.OrderRequested && o.RequestedBy == p.UserID {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindSelfApproval, fmt.Sprintf(
			"you requested the destruction of matter %s's content at %s: another counsel confirms it (before %s)", matter,
			contracts.FormatTime(o.RequestedAt), contracts.FormatTime(o.ExpiresAt)), warrant.ErrSelfConfirm)
	}
	if !p.IsCounsel() {
		return events.APIGatewayV2HTTPResponse{}, failure.New(failure.KindForbidden, "only counsel confirm a destruction")
	}
	o, err = store.ConfirmDestruction(ctx, p.FirmID, matter, p.UserID, p.Name)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, orderError(matter, o, err)
	}
	return carryOut(ctx, shred, o, id)
}

// carryOut destroys what it can of a confirmed order before the
// function's deadline; the sweeper finishes the rest.
func carryOut(ctx context.Context, shred OrderCarrier, o warrant.DestructionOrder, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	var deadline time.Time
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(-destroyMargin)
	}
	res, err := shred.CarryOut(ctx, o, deadline)
	if errors.Is(err, warrant.ErrMatterOnHold) {
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindConflict, fmt.Sprintf(
			"matter %s was put on hold while its content was destroyed: %d run(s) were destroyed, the others keep their content while the hold lasts",
			o.MatterID, len(res.Destroyed)), err)
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	v := orderView(o)
	v.Destroyed, v.AlreadyDestroyed, v.NotEnded = res.Destroyed, res.Already, res.NotEnded
	status := 202
	if res.Done {
		status, v.Status = 200, warrant.OrderDone
	} else {
		v.Remaining = true
	}
	return httpapi.JSON(status, v, id.CorrelationID), nil
}

// orderError words a refused write of a destruction order.
func orderError(matter string, o warrant.DestructionOrder, err error) error {
	switch {
	case errors.Is(err, warrant.ErrMatterOnHold):
		return failure.Wrap(failure.KindConflict, fmt.Sprintf("matter %s is on hold: no run of it loses its content until the hold is lifted", matter), err)
	case errors.Is(err, warrant.ErrDestructionPending):
		return failure.Wrap(failure.KindConflict, fmt.Sprintf("the destruction of matter %s's content was %s by %s at %s", matter, o.Status,
			who(o.RequestedBy, o.RequestedByName), contracts.FormatTime(o.RequestedAt)), err)
	case errors.Is(err, warrant.ErrSelfConfirm):
		return failure.Wrap(failure.KindSelfApproval, fmt.Sprintf("you requested the destruction of matter %s's content: another counsel confirms it", matter), err)
	case errors.Is(err, warrant.ErrNoOrder):
		return failure.Wrap(failure.KindConflict, fmt.Sprintf("the request to destroy matter %s's content expired or was replaced: request it again", matter), err)
	}
	return err
}
