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

// pinTarget is a per-firm server's target that publishes its schemas:
// CheckPin answers a change for the firm whose secret names "changed".
type pinTarget struct{ secretTarget }

func (p pinTarget) CheckPin(_ context.Context, c agent.TargetCall) error {
	if p.secret == "warrant/dms/changed" {
		return &agent.ToolChangedError{Server: "dms", Tool: c.Tool, Pinned: c.SchemaSHA256}
	}
	return nil
}

// Issue 25 item 1: the per-firm target asks the firm's own target whether
// a tool is still as pinned (the brain's PinChecker), and a system that
// publishes no schemas says nothing changed.
func TestPerFirmCheckPin(t *testing.T) {
	server := catalog.Server{Name: "dms", Kind: catalog.TargetMCP, URL: "https://dms.example/mcp",
		Auth: catalog.Auth{Kind: catalog.AuthBearer, Secret: "warrant/dms/{firm_id}"}}
	var _ agent.PinChecker = (*perFirm)(nil)
	p, err := newPerFirm(server, func(s catalog.Server) (agent.Target, error) {
		if s.Auth.Secret == "warrant/dms/changed" || s.Auth.Secret == "warrant/dms/5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f" {
			return pinTarget{secretTarget{"warrant/dms/changed"}}, nil
		}
		return secretTarget{s.Auth.Secret}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var changed *agent.ToolChangedError
	if err := p.CheckPin(context.Background(), agent.TargetCall{FirmID: "5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f", Tool: "file"}); !errors.As(err, &changed) {
		t.Fatalf("the firm's changed tool: %v", err)
	}
	if err := p.CheckPin(context.Background(), agent.TargetCall{FirmID: "6a1d7e2f-3c4b-4d6e-9fa0-1b2c3d4e5f60", Tool: "file"}); err != nil {
		t.Fatalf("a firm's target that publishes no schemas: %v", err)
	}
	if err := p.CheckPin(context.Background(), agent.TargetCall{FirmID: "../other"}); !errors.Is(err, warrant.ErrTargetUnreachable) || errors.As(err, &changed) {
		t.Fatalf("a pin check naming no firm: %v", err)
	}
}
