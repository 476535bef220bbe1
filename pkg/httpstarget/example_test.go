package httpstarget_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

func Example() {
	// A firm's filing system (here on loopback, so plain http and auth
	// none; a remote one is https with bearer or oauth_client_credentials).
	mux := http.NewServeMux()
	mux.HandleFunc("POST /warrant/v1/filings", func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("key:", r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"filing_id":"f-1"}`)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()

	target, err := httpstarget.New(httpstarget.Config{Name: "court", URL: ts.URL + "/warrant", Auth: remote.Auth{Kind: remote.AuthNone}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := target.Call(context.Background(), agent.TargetCall{
		Tool:      "v1/filings",
		Input:     []byte(`{"matter_id":"m-1","title":"Motion to compel"}`),
		EffectRef: "7d0c2e4a-1b3f-4c5d-8e6f-000000000001",
		FirmID:    "firm-1", RunID: "run-1", MatterID: "m-1",
	})
	fmt.Println(string(res.Content), res.IsError, err)
	// Output:
	// key: "7d0c2e4a-1b3f-4c5d-8e6f-000000000001"
	// {"filing_id":"f-1"} false <nil>
}
