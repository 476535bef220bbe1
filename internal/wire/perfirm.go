package wire

import (
	"context"
	"fmt"
	"sync"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// perFirm is the target of a server whose credentials are per firm (a
// secret's name holding catalog.FirmPlaceholder): one target per firm,
// built on the firm's first call with the secrets named for it, so one
// firm's token never rides on another firm's call and each keeps its own
// token cache and sessions.
type perFirm struct {
	server catalog.Server
	build  func(catalog.Server) (agent.Target, error)

	mu     sync.Mutex
	byFirm map[string]agent.Target
}

// newPerFirm checks that the server's target builds (for a placeholder
// firm, so a catalog that cannot work fails at load, not on a call) and
// returns the per-firm target.
func newPerFirm(server catalog.Server, build func(catalog.Server) (agent.Target, error)) (*perFirm, error) {
	if _, err := build(server.ForFirm("00000000-0000-4000-8000-000000000000")); err != nil {
		return nil, err
	}
	return &perFirm{server: server, build: build, byFirm: map[string]agent.Target{}}, nil
}

// Call runs c on the target of c's firm. The firm comes from the run (its
// JWT claim at invoke), never from the model; it is checked to be a
// canonical UUID before it names a secret.
func (p *perFirm) Call(ctx context.Context, c agent.TargetCall) (agent.TargetResult, error) {
	t, err := p.target(c.FirmID)
	if err != nil {
		return agent.TargetResult{}, err
	}
	return t.Call(ctx, c)
}

// CheckPin asks the target of c's firm (agent.PinChecker); a system that
// publishes no schemas (no PinChecker) has nothing to compare: nil.
func (p *perFirm) CheckPin(ctx context.Context, c agent.TargetCall) error {
	t, err := p.target(c.FirmID)
	if err != nil {
		return err
	}
	if pc, ok := t.(agent.PinChecker); ok {
		return pc.CheckPin(ctx, c)
	}
	return nil
}

func (p *perFirm) target(firm string) (agent.Target, error) {
	if err := contracts.CheckUUID("firm_id", firm); err != nil {
		return nil, fmt.Errorf("server %q: the call names no firm: %w", p.server.Name, warrant.ErrTargetUnreachable)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.byFirm[firm]; ok {
		return t, nil
	}
	t, err := p.build(p.server.ForFirm(firm))
	if err != nil {
		// Nothing was sent: the firm's target could not be made.
		return nil, fmt.Errorf("server %q: the firm's target does not build: %w", p.server.Name, warrant.ErrTargetUnreachable)
	}
	p.byFirm[firm] = t
	return t, nil
}
