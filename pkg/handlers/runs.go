package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"

	"github.com/seed-f6d3920e/warrant"
)

// RunsStore is the read-only part of the store the runs routes use.
type RunsStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	// FirmPendingWarrants yields the firm's pending warrants, oldest
	// request first, after the one after places (nil: from the first),
	// reading about batch at a time while the caller consumes.
	FirmPendingWarrants(ctx context.Context, firm string, after *warrant.Warrant, batch int) iter.Seq2[warrant.Warrant, error]
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	// GetBudget reads a firm's budget for a month and at most maxOpen of
	// its open reservations.
	GetBudget(ctx context.Context, firm, month string, maxOpen int) (warrant.Budget, error)
}

// Runs handles the read-only routes, all scoped by the caller's firm:
//
//	GET /v1/runs/{run_id}[?consistent=true]     the run view: the stream projection, or a fold of the ledger
//	GET /v1/runs/{run_id}?wait=N                waits up to N seconds (1..20) while the run is running, then
//	                                            answers the consistent view (a long poll after a 202); the
//	                                            wait ends WaitMargin before the invocation's deadline
//	GET /v1/runs/{run_id}/events[?after_seq=N&limit=M&head=true]  ledger lines as NDJSON; X-Next-After-Seq when more remain;
//	                                            with head=true the last page ends with the run's signed head
//	                                            (a page ends at M lines or maxEventsBodyBytes, whichever comes first)
//	GET /v1/approvals[?status=pending&limit=N&next=C]  the firm's pending warrants (a listing, never an
//	                                            authorization), a page at a time: next when more follow
//	GET /v1/budget[?limit=N]                    the firm's model budget this month (UTC): limit, spent,
//	                                            reserved, headroom, and up to N open reservations
//	GET /v1/runs/{run_id}/evidence[?checkpoint=N]  the run's evidence bundle (package evidence), checkable offline
//	GET /v1/runs/{run_id}/receipts              the run's receipts as the desk shows them, checked here against
//	                                            the firm log and its latest checkpoint
//	GET /v1/evidence/log[?from=N&checkpoint=M]  the firm log's entries from N to checkpoint M, and M
//	GET /v1/keys                                the public keys receipts and checkpoints are signed with
//	GET /v1/matters                             the firm's matter registry (counsel or firm_admin)
//	GET /v1/matters/{matter_id}                 one matter, with its version's ETag (counsel or firm_admin)
//	GET /v1/matters/{matter_id}/versions[?after_version=N&limit=M]  the matter's versions, oldest first:
//	                                            who wrote each, when, before and after (counsel or firm_admin)
//	GET /desk, GET /desk/{name}                 the counsel's desk (package desk): the page, its script,
//	                                            style sheet and sign-in configuration; no claims needed
//
// Errors (problem+json): 400 invalid path or query, 401 missing claims, 404 no
// such run in this firm.
type Runs struct {
	Store RunsStore
	// Keys verifies a run's signed ledger head on a consistent read (nil:
	// the head's seq and hash are checked, not its MAC).
	Keys reducer.HeadVerifier
	HTTP httpapi.Config
	Resp httpapi.Responder
	// Poll is how often ?wait re-reads the run item (default 250 ms).
	Poll time.Duration
	// FirmBudget is the monthly budget in nano-USD of a firm whose settings
	// name none (FIRM_MONTHLY_BUDGET_USD; nil: none, such a firm has zero).
	FirmBudget *int64
	// Now is the clock GET /v1/budget reads the month on (nil: time.Now).
	Now func() time.Time
	// Desk is how the counsel's desk signs counsel in (GET /desk/config.json).
	Desk desk.Config
	// Matters is the firm's matter registry (GET /v1/matters).
	Matters MattersStore
	// Holds reads matters' legal holds and destruction orders (GET
	// /v1/matters/{matter_id}/hold; nil: not served).
	Holds HoldStore
	// Evidence assembles runs' evidence bundles and the firm log, and holds
	// the public keys GET /v1/keys publishes.
	Evidence *Evidence
	// DataKeys opens the runs' data keys (DATA_KEY, issue 26): a sealed
	// run's content is shown opened. nil: a sealed run's content cannot be
	// shown (config_invalid).
	DataKeys seal.Keyring
}

// Desk routes: the page and its assets, public (API Gateway runs no
// authorizer on them); the page holds no authority until counsel signs in.
const (
	DeskRoute       = "GET /desk"
	DeskAssetsRoute = "GET /desk/{proxy+}"
)

// MaxWait bounds ?wait: API Gateway ends an integration at 30 s.
const MaxWait = 20

// WaitMargin is what a long poll leaves of its invocation's time for what
// follows the wait: the consistent read of the ledger, its fold against the
// signed head, and the answer. A wait never runs closer than this to the
// Lambda deadline; the runs function's Timeout is at least MaxWait plus this
// (the template test checks it).
const WaitMargin = 3 * time.Second

// Handle is the Lambda handler; it dispatches on the API Gateway route key.
func (h *Runs) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	id := failure.Identity{CorrelationID: httpapi.CorrelationID(req)}
	switch req.RouteKey {
	case DeskRoute:
		return deskResponse(desk.Serve("index.html", h.Desk), id.CorrelationID), nil
	case DeskAssetsRoute:
		r := desk.Serve(req.PathParameters["proxy"], h.Desk)
		if r.Status == http.StatusNotFound {
			// The API's one error shape, with the desk's headers.
			resp := h.Resp.Error(ctx, failure.New(failure.KindNotFound, "no such desk asset"), failure.StageRequest, id)
			for k, v := range desk.Headers(h.Desk) {
				if _, set := resp.Headers[k]; !set {
					resp.Headers[k] = v
				}
			}
			return resp, nil
		}
		return deskResponse(r, id.CorrelationID), nil
	}
	p, err := h.HTTP.Principal(req)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageAuthorize, id), nil
	}
	id.FirmID = p.FirmID
	var resp events.APIGatewayV2HTTPResponse
	switch req.RouteKey {
	case "GET /v1/runs/{run_id}":
		resp, err = h.run(ctx, req, p, &id)
	case "GET /v1/runs/{run_id}/events":
		resp, err = h.events(ctx, req, p, &id)
	case "GET /v1/approvals":
		resp, err = h.approvals(ctx, req, p, &id)
	case "GET /v1/budget":
		resp, err = h.budget(ctx, req, p, &id)
	case "GET /v1/runs/{run_id}/evidence":
		resp, err = h.evidence(ctx, req, p, &id)
	case "GET /v1/runs/{run_id}/receipts":
		resp, err = h.receipts(ctx, req, p, &id)
	case "GET /v1/evidence/log":
		resp, err = h.firmLog(ctx, req, p, &id)
	case "GET /v1/keys":
		resp, err = h.keys(req, &id)
	case ListMattersRoute:
		resp, err = listMatters(ctx, h.Matters, req, p, &id)
	case GetMatterRoute:
		resp, err = getMatter(ctx, h.Matters, req, p, &id)
	case MatterVersionsRoute:
		resp, err = matterVersions(ctx, h.Matters, req, p, &id)
	case GetSettingsRoute:
		resp, err = getSettings(ctx, h.Store, req, p, &id)
	case GetHoldRoute:
		if h.Holds == nil {
			err = inRequest(failure.New(failure.KindNotFound, "no such route"))
			break
		}
		resp, err = getHold(ctx, h.Holds, req, p, &id)
	default:
		err = inRequest(failure.New(failure.KindNotFound, "no such route"))
	}
	if err != nil {
		stage := failure.StageLedgerRead
		if errors.As(err, new(*requestError)) {
			stage = failure.StageRequest
		}
		return h.Resp.Error(ctx, err, stage, id), nil
	}
	return resp, nil
}

// requestError marks an error in the request itself (path, query), so it is
// recorded at the request stage rather than as a failed read.
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

func inRequest(err error) error {
	if err == nil {
		return nil
	}
	return &requestError{err}
}

func (h *Runs) run(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "consistent", "wait"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	consistent, err := httpapi.QueryEnum(req, "consistent", "false", "true", "false")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	wait, err := httpapi.QueryInt(req, "wait", 0, 0, MaxWait)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	run, err := h.Store.GetRun(ctx, p.FirmID, runID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if wait > 0 {
		if run, err = h.waitWhileRunning(ctx, run, waitBound(ctx, time.Duration(wait)*time.Second)); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		consistent = "true"
	}
	// A sealed run's projection holds no content (stream-reduce folds
	// without the key): a view that shows some (the final text, the
	// warrant the run waits on) is folded from the ledger and opened.
	sealedContent := len(run.DataKey) > 0 && (run.Status == warrant.RunHeld || run.Status == warrant.RunCompleted)
	if consistent == "true" || sealedContent {
		// The ledger itself, folded and held to its signed head: the view
		// says so, and a ledger that does not match is an error, not a view.
		c := newContent(h.DataKeys)
		defer c.close()
		folded, err := reducer.Fold(ctx, h.Store, p.FirmID, runID, reducer.FoldOptions{Keys: h.Keys, Open: c.opener})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		run = folded.Run
		v := runView(folded.State, run)
		if consistent == "true" {
			// Asked for: the view says the ledger was checked.
			v.Ledger = &LedgerView{HeadSeq: run.Head.Seq, HeadHash: run.Head.Hash, KeyID: run.Head.KeyID, Verified: h.Keys != nil}
		}
		return httpapi.JSON(200, v, id.CorrelationID), nil
	}
	var st reducer.RunState
	if len(run.Projection.State) > 0 {
		if err := json.Unmarshal(run.Projection.State, &st); err != nil {
			return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindInternal, "", err)
		}
	}
	return httpapi.JSON(200, runView(st, run), id.CorrelationID), nil
}

// waitBound is how long a wait of d may last in ctx: d, cut to end
// WaitMargin before ctx's deadline (the Lambda invocation's). Zero or less
// means no wait at all: the run is read once.
func waitBound(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)-WaitMargin)
	}
	return d
}

// waitWhileRunning re-reads the run item (a strongly consistent read) until
// the run is no longer running or d passed, whichever comes first; a
// cancelled request ends the wait early with what it has.
func (h *Runs) waitWhileRunning(ctx context.Context, run warrant.Run, d time.Duration) (warrant.Run, error) {
	poll := h.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	if d <= 0 {
		return run, nil
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for run.Status == warrant.RunRunning {
		select {
		case <-ctx.Done():
			return run, nil
		case <-deadline.C:
			return run, nil
		case <-time.After(poll):
		}
		next, err := h.Store.GetRun(ctx, run.FirmID, run.RunID)
		if err != nil {
			return run, err
		}
		run = next
	}
	return run, nil
}

func (h *Runs) events(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "after_seq", "limit", "head", "open"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	withHead, err := httpapi.QueryEnum(req, "head", "false", "true", "false")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	// open=true shows a sealed line's content (contracts.OpenedJSON), for
	// a reader; the lines as stored, which verify, are the default and the
	// export.
	open, err := httpapi.QueryEnum(req, "open", "false", "true", "false")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	after, err := httpapi.QueryInt(req, "after_seq", 0, 0, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", 500, 1, 1000)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	// The run item, not the ledger, decides existence: an empty page of a real
	// run is 200, another firm's run is 404.
	run, err := h.Store.GetRun(ctx, p.FirmID, runID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	items, more, err := h.Store.ReadLedger(ctx, p.FirmID, runID, after, int(limit))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var head *warrant.LedgerHead
	if withHead == "true" && !more {
		if items, more, head, err = h.toHead(ctx, p.FirmID, runID, after, int(limit), items); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	// The page ends at limit lines or before the body would pass
	// maxEventsBodyBytes, whichever comes first, and always holds a line
	// when one exists.
	lines := make([][]byte, 0, len(items)+1)
	size := 0
	c := newContent(h.DataKeys)
	defer c.close()
	for _, it := range items {
		line := it.Raw
		if open == "true" {
			if line, err = c.openedLine(ctx, run, it.Raw); err != nil {
				return events.APIGatewayV2HTTPResponse{}, err
			}
		}
		n := escapedLineLen(line)
		if len(lines) > 0 && size+n > maxEventsBodyBytes {
			more = true
			break
		}
		lines = append(lines, line)
		size += n
	}
	extra := map[string]string{}
	if more && len(lines) > 0 {
		extra["X-Next-After-Seq"] = strconv.FormatInt(items[len(lines)-1].Seq, 10)
	}
	if head != nil && !more {
		// The last page ends with the run's signed head, which its last
		// line is: an export a holder of the ledger key can check offline
		// (warrant ledger verify --key).
		lines = append(lines, contracts.EncodeHeadLine(contracts.HeadLine{FirmID: p.FirmID, RunID: runID,
			Seq: head.Seq, Hash: head.Hash, MAC: head.MAC, KeyID: head.KeyID}))
	}
	return httpapi.NDJSON(200, lines, id.CorrelationID, extra), nil
}

// toHead ends an export's last page exactly at the run's signed head, read
// after the lines: a head that moved on while they were read (a concurrent
// append) is followed, a few rounds at most (then store_conflict,
// retryable), and a line past the head, which nobody signed, is
// ledger_corrupt rather than exported as if the head covered it. A page
// that fills up before the head is no longer the last (more).
func (h *Runs) toHead(ctx context.Context, firm, runID string, after int64, limit int, items []warrant.LedgerItem) ([]warrant.LedgerItem, bool, *warrant.LedgerHead, error) {
	for round := 1; ; round++ {
		run, err := h.Store.GetRun(ctx, firm, runID)
		if err != nil {
			return nil, false, nil, err
		}
		last := after
		if len(items) > 0 {
			last = items[len(items)-1].Seq
		}
		head := run.Head
		switch {
		case head.Seq == last:
			return items, false, &head, nil
		case head.Seq > last && len(items) >= limit:
			return items, true, nil, nil
		case round == 4 && head.Seq > last:
			return nil, false, nil, failure.New(failure.KindStoreConflict, "the run's ledger kept moving while it was read; try again")
		case head.Seq < last && round > 1:
			return nil, false, nil, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not match its signed head",
				fmt.Errorf("the ledger runs to seq %d, its signed head is seq %d", last, head.Seq))
		case head.Seq > last:
			more, moreItems := false, []warrant.LedgerItem(nil)
			if moreItems, more, err = h.Store.ReadLedger(ctx, firm, runID, last, limit-len(items)); err != nil {
				return nil, false, nil, err
			}
			if len(moreItems) == 0 {
				return nil, false, nil, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not match its signed head",
					fmt.Errorf("the signed head is seq %d, the ledger ends at %d", head.Seq, last))
			}
			items = append(items, moreItems...)
			if more {
				return items, true, nil, nil
			}
		}
		// head.Seq < last in the first round: a line visible before the
		// head that covers it; read the run item once more.
	}
}

// maxEventsBodyBytes bounds the NDJSON body of one events page as the
// Lambda runtime serializes it. Lambda refuses a synchronous response
// payload over 6 MB (6,291,456 bytes), and that payload is the API Gateway
// proxy response as JSON, which carries the body as a JSON string: each
// body byte costs what its escape costs (see escapedLineLen). 5 MiB
// (5,242,880 bytes) leaves 1 MiB for the rest of the payload (status code,
// the four headers, member names: about 250 bytes today), so the limit
// holds with room for any header added later. A line is at most
// contracts.MaxLineBytes (400 KiB), 2.4 MB even if every byte escaped to 6,
// so a page's first line always fits.
const maxEventsBodyBytes = 5 << 20

// escapedLineLen is what line and its newline add to the serialized
// response: the length of line as a JSON string without its quotes, as
// encoding/json writes it ('"' and '\' take 2 bytes, U+2028 and U+2029 6,
// and '<', '>', '&' 6 with HTML escaping on), plus 2 for the escaped "\n".
// aws-lambda-go leaves HTML escaping off by default, so counting it makes
// the size an upper bound, true whichever way the runtime is configured.
func escapedLineLen(line []byte) int {
	b, _ := json.Marshal(string(line)) // a string always encodes
	return len(b) - len(`""`) + len(`\n`)
}

func (h *Runs) approvals(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "status", "limit", "next"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if _, err := httpapi.QueryEnum(req, "status", "pending", "pending"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", 100, 1, 500)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	var after *warrant.Warrant
	if c, ok := req.QueryStringParameters["next"]; ok {
		w, err := decodePendingCursor(c, p.FirmID)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, inRequest(err)
		}
		after = &w
	}
	// A page ends at limit warrants or when the next would take the body
	// past maxApprovalsBodyBytes; next is given when a warrant follows
	// (one more is read to know).
	views, size, next := []WarrantView{}, 0, ""
	var last warrant.Warrant
	c := newContent(h.DataKeys)
	defer c.close()
	for w, err := range h.Store.FirmPendingWarrants(ctx, p.FirmID, after, int(limit)+1) {
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if w, err = c.warrant(ctx, h.Store, w); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		v := warrantView(w)
		v.ToolInput = nil // each input once: tool_input_canonical holds it
		n, err := escapedJSONLen(v)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if len(views) == int(limit) || len(views) > 0 && size+n > maxApprovalsBodyBytes {
			next = pendingCursor(p.FirmID, last)
			break
		}
		views, size, last = append(views, v), size+n, w
	}
	body := map[string]any{"approvals": views}
	if next != "" {
		body["next"] = next
	}
	return httpapi.JSON(200, body, id.CorrelationID), nil
}

// maxApprovalsBodyBytes bounds one GET /v1/approvals page's body as the
// Lambda runtime serializes it, as maxEventsBodyBytes bounds an events page
// (escapedJSONLen counts each view so). A pending warrant's view is at most
// a few MB escaped (its input is at most agent.MaxToolInputBytes, and the
// warrant item DynamoDB's 400 KB), so a page's first warrant always fits
// and no page is too large to answer.
const maxApprovalsBodyBytes = maxEventsBodyBytes

// escapedJSONLen is what v adds to a JSON body the Lambda payload carries
// as a string: its JSON escaped again (escapedLineLen), the separator
// within the newline's allowance.
func escapedJSONLen(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return escapedLineLen(b), nil
}

// pendingCursor is the opaque next of a GET /v1/approvals page that ended
// on w: the firm's id and w's place in its list (request time and approval
// id, the index's sort key), as base64url JSON. It names nothing the page
// did not show.
func pendingCursor(firm string, w warrant.Warrant) string {
	b, _ := json.Marshal(cursorBody{FirmID: firm, RequestedAt: w.RequestedAt.UTC().Format(time.RFC3339Nano), ApprovalID: w.ApprovalID})
	return base64.RawURLEncoding.EncodeToString(b)
}

type cursorBody struct {
	FirmID      string `json:"f"`
	RequestedAt string `json:"t"`
	ApprovalID  string `json:"a"`
}

// maxCursorLen bounds next before it is decoded (a cursor is about 160
// characters).
const maxCursorLen = 512

// decodePendingCursor reads a next the list gave the caller's firm: exactly
// pendingCursor's form, and of this firm. Anything else is the caller's
// error, naming next; a cursor of another firm's list is refused, not
// read as a place in this one.
func decodePendingCursor(c, firm string) (warrant.Warrant, error) {
	bad := failure.New(failure.KindInvalidRequest, "query parameter next must be the next of a page of this list, as given")
	if c == "" || len(c) > maxCursorLen {
		return warrant.Warrant{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return warrant.Warrant{}, bad
	}
	var cb cursorBody
	if err := contracts.DecodeStrict(raw, &cb); err != nil {
		return warrant.Warrant{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, cb.RequestedAt)
	if err != nil || contracts.CheckUUID("", cb.ApprovalID) != nil || contracts.CheckUUID("", cb.FirmID) != nil {
		return warrant.Warrant{}, bad
	}
	if cb.FirmID != firm {
		return warrant.Warrant{}, failure.New(failure.KindInvalidRequest, "query parameter next is the cursor of another firm's list")
	}
	return warrant.Warrant{FirmID: firm, ApprovalID: cb.ApprovalID, RequestedAt: t}, nil
}

// budget answers GET /v1/budget: the caller's firm's budget for the current
// month (UTC) as it stands, with the limit in force now (the firm's
// settings, else the deployment's default, else zero). The budget item
// keeps the limit it was last applied with; the month's next reservation
// applies a changed one, so the view shows spent, reserved and headroom
// against the limit in force (headroom never below zero).
func (h *Runs) budget(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "limit"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", 100, 1, 500)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	month := warrant.MonthOf(now())
	settings, err := h.Store.GetFirmSettings(ctx, p.FirmID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	b, err := h.Store.GetBudget(ctx, p.FirmID, month, int(limit))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, budgetView(b, settings.MonthlyLimit(h.FirmBudget)), id.CorrelationID), nil
}

func deskResponse(r desk.Response, correlationID string) events.APIGatewayV2HTTPResponse {
	if correlationID != "" {
		r.Headers[httpapi.CorrelationHeader] = correlationID
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: r.Headers, Body: r.Body}
}
