package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

var _ agent.PinChecker = (*mcp.Target)(nil)

const motionSchemaChanged = `{"type":"object","properties":{"matter_id":{"type":"string"},"title":{"type":"string"},"fee_account":{"type":"string"}},"required":["matter_id","title","fee_account"]}`

// changeMotion makes the server offer file_motion with another schema. A
// stateless server tells no client (no notifications/tools/list_changed
// reaches it), as a server restarted with a new version of the tool.
func changeMotion(srv *testServer) {
	srv.addTool("file_motion", motionSchemaChanged, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("filed with a fee"), nil
	})
}

// Issue 25 item 1: CheckPin asks the server's tools/list now, never a
// cached one, and calls nothing: nil for a tool listed as pinned, a
// ToolChangedError with both hashes for one listed with another schema or
// not at all.
func TestCheckPin(t *testing.T) {
	srv := newServer(t, serverOptions{stateless: true})
	tg := newTarget(t, mcp.Config{URL: srv.URL, ToolsMaxAge: time.Hour})
	ctx := context.Background()
	c := call("file_motion", motionSchema, `{}`)
	if err := tg.CheckPin(ctx, c); err != nil {
		t.Fatalf("CheckPin of a tool listed as pinned: %v", err)
	}
	changeMotion(srv)
	err := tg.CheckPin(ctx, c)
	var changed *agent.ToolChangedError
	if !errors.As(err, &changed) || changed.Server != "docs" || changed.Tool != "file_motion" ||
		changed.Pinned != pin(t, motionSchema) || changed.Current != pin(t, motionSchemaChanged) {
		t.Fatalf("CheckPin after the change: %#v, want a ToolChangedError with the pin and the server's hash", err)
	}
	if !errors.Is(err, warrant.ErrTargetUnreachable) {
		t.Fatalf("a ToolChangedError says nothing was sent: %v", err)
	}
	if err := tg.CheckPin(ctx, call("archive_matter", anySchema, `{}`)); !errors.As(err, &changed) || changed.Current != "" {
		t.Fatalf("CheckPin of a tool the server does not list: %v", err)
	}
	if n := srv.arrivals("file_motion") + srv.arrivals("archive_matter"); n != 0 {
		t.Fatalf("CheckPin sent %d tools/call, want none", n)
	}

	// A server that cannot be reached: an error that is no ToolChangedError.
	srv.Close()
	err = tg.CheckPin(ctx, c)
	if err == nil || errors.As(err, &changed) || !errors.Is(err, warrant.ErrTargetUnreachable) {
		t.Fatalf("CheckPin of a server gone: %v, want unreachable", err)
	}
}

// Issue 25 item 1: an effect's pin is accepted only from a tools/list made
// for that call; a read's from one at most ToolsMaxAge old. The server
// changed the tool and told nobody: the read is still sent on the list of
// an hour's trust, the effect is refused before anything is sent.
func TestEffectPinFromAFreshList(t *testing.T) {
	srv := newServer(t, serverOptions{stateless: true})
	tg := newTarget(t, mcp.Config{URL: srv.URL, ToolsMaxAge: time.Hour})
	ctx := context.Background()
	read := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	effect := read
	effect.Effect = true
	if _, err := tg.Call(ctx, effect); err != nil {
		t.Fatal(err)
	}
	changeMotion(srv)
	if _, err := tg.Call(ctx, read); err != nil {
		t.Fatalf("a read within ToolsMaxAge of its list: %v", err)
	}
	if n := srv.arrivals("file_motion"); n != 2 {
		t.Fatalf("%d tools/call arrived, want 2 (the first effect, the read)", n)
	}
	_, err := tg.Call(ctx, effect)
	var changed *agent.ToolChangedError
	if !errors.As(err, &changed) || changed.Pinned != pin(t, motionSchema) || changed.Current != pin(t, motionSchemaChanged) {
		t.Fatalf("the effect after the change: %v, want a ToolChangedError", err)
	}
	if n := srv.arrivals("file_motion"); n != 2 {
		t.Fatalf("the changed tool's effect reached the server (%d tools/call)", n)
	}
}
