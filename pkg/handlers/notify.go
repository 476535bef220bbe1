package handlers

import (
	"context"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// Publisher sends notifications (pkg/eventbus's Bus: EventBridge).
type Publisher interface {
	Publish(ctx context.Context, events []notify.Event) error
}

// MatterReader reads a matter's record, for its name (pkg/dynamo's Store).
type MatterReader interface {
	GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error)
}

// Notifier tells counsel what happened: the events new ledger lines call
// for (pkg/notify), published before the projection moves past them, so a
// notification that could not be sent is sent again with its stream record
// (at least once, each with a stable id).
type Notifier struct {
	Bus     Publisher
	Matters MatterReader
	// DeskURL is the desk's base URL (DESK_URL), for the events' links.
	DeskURL string
}

// linesEvents publishes the events of lines, folded from the state from.
func (n *Notifier) linesEvents(ctx context.Context, firm string, from reducer.RunState, lines []contracts.Line) error {
	if n == nil || len(lines) == 0 {
		return nil
	}
	evs, err := notify.FromLines(from, lines, n.DeskURL)
	if err != nil || len(evs) == 0 {
		return err
	}
	if name := n.matterName(ctx, firm, evs[0].MatterID); name != "" {
		for i := range evs {
			evs[i].MatterName = name
		}
	}
	return n.Bus.Publish(ctx, evs)
}

// matterName is the registry's name of a matter ("" when it has none).
func (n *Notifier) matterName(ctx context.Context, firm, matter string) string {
	if n.Matters == nil || matter == "" {
		return ""
	}
	m, err := n.Matters.GetMatter(ctx, firm, matter)
	if err != nil {
		return "" // none recorded, or unreadable: a name is a courtesy, the event goes without it
	}
	return contracts.DisplayName(m.Title)
}
