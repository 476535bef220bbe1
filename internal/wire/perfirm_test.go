package wire

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

// secretTarget answers with the secret name its server was built with.
type secretTarget struct{ secret string }

func (s secretTarget) Call(context.Context, agent.TargetCall) (agent.TargetResult, error) {
	b, _ := json.Marshal(s.secret)
	return agent.TargetResult{Content: b}, nil
}

// A per-firm server's calls run on a target built with the calling firm's
// secret, one per firm, made once; a call naming no firm reaches nothing.
func TestPerFirmCredentials(t *testing.T) {
	server := catalog.Server{Name: "efile", Kind: catalog.TargetHTTPS, URL: "https://efile.example/",
		Auth: catalog.Auth{Kind: catalog.AuthBearer, Secret: "warrant/efile/{firm_id}"}}
	var mu sync.Mutex
	builds := map[string]int{}
	build := func(s catalog.Server) (agent.Target, error) {
		mu.Lock()
		defer mu.Unlock()
		builds[s.Auth.Secret]++
		return secretTarget{s.Auth.Secret}, nil
	}
	p, err := newPerFirm(server, build)
	if err != nil {
		t.Fatal(err)
	}
	firmA, firmB := "5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f", "6a1d7e2f-3c4b-4d6e-9fa0-1b2c3d4e5f60"
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		firm := firmA
		if i%2 == 1 {
			firm = firmB
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.Call(context.Background(), agent.TargetCall{FirmID: firm})
			if err != nil || string(res.Content) != `"warrant/efile/`+firm+`"` {
				t.Errorf("firm %s: %s %v", firm, res.Content, err)
			}
		}()
	}
	wg.Wait()
	if builds["warrant/efile/"+firmA] != 1 || builds["warrant/efile/"+firmB] != 1 {
		t.Fatalf("builds %v: want one target per firm", builds)
	}
	for _, bad := range []string{"", "../other", "5F0C6D1E-2B3A-4C5D-8E9F-0A1B2C3D4E5F"} {
		if _, err := p.Call(context.Background(), agent.TargetCall{FirmID: bad}); !errors.Is(err, warrant.ErrTargetUnreachable) {
			t.Fatalf("firm %q: %v", bad, err)
		}
	}
	if _, err := newPerFirm(server, func(catalog.Server) (agent.Target, error) { return nil, errors.New("bad config") }); err == nil {
		t.Fatal("a server whose target cannot build loaded")
	}
}
