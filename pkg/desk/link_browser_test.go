package desk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// linkedWarrants are two pending warrants; a notification links to the
// second.
func linkedWarrants() (handlers.WarrantView, handlers.WarrantView) {
	in1, in2 := `{"matter_id":"`+demoMatter+`","title":"Motion A"}`, `{"matter_id":"`+demoMatter+`","title":"Motion B"}`
	return pendingWarrant("1a1a1a1a-1111-4111-8111-111111111111", in1, sha256Hex(in1), "File “Motion A”."),
		pendingWarrant("2b2b2b2b-2222-4222-8222-222222222222", in2, sha256Hex(in2), "File “Motion B”.")
}

// linkedCard waits until the warrant the link names is open, its toggle
// focused.
func linkedCard(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	sel := wsel(id)
	if err := waitFor(ctx, `document.activeElement && document.activeElement.matches('`+sel+` .warrant-toggle[aria-expanded="true"]') && !document.querySelector('`+sel+` .warrant-body').hidden`); err != nil {
		t.Fatalf("the linked warrant %s is not opened and focused: %v (focus on %s)", id, err,
			evalIn[string](t, ctx, `document.activeElement ? document.activeElement.outerHTML.slice(0, 120) : 'nothing'`))
	}
}

// Issue 27 item 2: a notification's link, desk#/runs/<run>/warrants/<id>,
// opens that warrant (open, its toggle focused, filters that hid it
// cleared); a link to a warrant no longer pending says so and links to
// its run.
func TestNotificationLinkOpensTheWarrant(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	a, b := linkedWarrants()
	f := newFakeAPI(t, a, b)
	ctx := openDesk(t, f)
	evalIn[any](t, ctx, `(() => { const s = document.querySelector('#filter-tier'); s.value = 'medium'; s.dispatchEvent(new Event('change')); return null; })()`)
	evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+b.RunID+`/warrants/`+b.ApprovalRequestID+`'; return null; })()`)
	linkedCard(t, ctx, b.ApprovalRequestID)
	if hidden := evalIn[bool](t, ctx, `document.querySelector('`+wsel(b.ApprovalRequestID)+`').hidden`); hidden {
		t.Error("the linked warrant is hidden by a filter")
	}
	browsertest.CheckAxe(t, ctx, "a notification's link to a warrant")

	const gone = "3c3c3c3c-3333-4333-8333-333333333333"
	evalIn[any](t, ctx, `(() => { location.hash = '#/runs/run-gone/warrants/`+gone+`'; return null; })()`)
	if err := waitFor(ctx, `!!document.querySelector('#warrant-gone a[href="#/runs/run-gone"]')`); err != nil {
		t.Fatalf("a link to a warrant no longer pending: %v", err)
	}
	if got := evalIn[string](t, ctx, `document.querySelector('#warrant-gone').textContent`); !strings.Contains(got, "no longer pending") {
		t.Errorf("the note says %q", got)
	}
}

// ... and through the identity provider's sign-in: the link is kept across
// the redirect (the provider drops the hash), and the warrant opens once
// counsel is signed in.
func TestNotificationLinkSurvivesSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	_, b := linkedWarrants()
	token := jwt(map[string]any{"sub": "c0c0c0c0-1111-4222-8333-444455556666", "email": "counsel@warrant-law.example",
		"firm_id": "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", "roles": []string{"counsel"}})
	p := newIDP(t, token)
	cfg := desk.Config{Auth: "oidc", ClientID: "desk-client", AuthorizeURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token",
		Scope: "openid email profile", FirmClaim: "firm_id", RolesClaim: "roles"}
	serve := func(w http.ResponseWriter, r desk.Response) {
		for k, v := range r.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(r.Status)
		w.Write([]byte(r.Body))
	}
	list, _ := json.Marshal(map[string]any{"approvals": []handlers.WarrantView{b}})
	api := http.NewServeMux()
	api.HandleFunc("GET /desk", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve("index.html", cfg)) })
	api.HandleFunc("GET /desk/{name}", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve(r.PathValue("name"), cfg)) })
	api.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(list)
	})
	api.HandleFunc("GET /v1/matters", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"matters":[]}`))
	})
	srv := httptest.NewServer(api)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(browsertest.Browser(t), time.Minute)
	defer cancel()
	link := "#/runs/" + b.RunID + "/warrants/" + b.ApprovalRequestID
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/desk"+link), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#whoami"))); err != nil {
		t.Fatalf("sign-in from a link: %v", err)
	}
	linkedCard(t, ctx, b.ApprovalRequestID)
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.HasSuffix(loc, "/desk"+link) || strings.Contains(loc, "code=") {
		t.Errorf("the address after sign-in: %s, want it to end /desk%s", loc, link)
	}
}
