// Package eventbus publishes notifications (pkg/notify) to an Amazon
// EventBridge bus with PutEvents: ten entries a request, the entries
// EventBridge reports failed sent again, and whatever still fails is a
// transient error, so the caller's stream record is retried (the events'
// ids are stable: a consumer drops a repeat).
package eventbus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

// Client is the part of the EventBridge client the bus uses.
type Client interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Bus is one event bus.
type Bus struct {
	client Client
	name   string
}

// New returns the bus named name.
func New(client Client, name string) *Bus { return &Bus{client: client, name: name} }

const (
	perRequest = 10 // PutEvents' limit
	tries      = 3
)

// Publish sends events, in order, ten a request.
func (b *Bus) Publish(ctx context.Context, events []notify.Event) error {
	for start := 0; start < len(events); start += perRequest {
		batch := events[start:min(start+perRequest, len(events))]
		entries := make([]types.PutEventsRequestEntry, len(batch))
		for i, e := range batch {
			detail, err := json.Marshal(e)
			if err != nil {
				return err
			}
			t, _ := time.Parse("2006-01-02T15:04:05.000Z", e.OccurredAt)
			entries[i] = types.PutEventsRequestEntry{EventBusName: aws.String(b.name), Source: aws.String(notify.Source),
				DetailType: aws.String(e.Type), Detail: aws.String(string(detail)), Resources: []string{}}
			if !t.IsZero() {
				entries[i].Time = aws.Time(t)
			}
		}
		if err := b.put(ctx, entries); err != nil {
			return err
		}
	}
	return nil
}

// put sends entries, then again the ones EventBridge reports failed.
func (b *Bus) put(ctx context.Context, entries []types.PutEventsRequestEntry) error {
	for try := 1; ; try++ {
		out, err := b.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		if err != nil {
			return failure.Transient(failure.KindStoreUnavailable, 2*time.Second, fmt.Errorf("eventbus: put events: %w", err))
		}
		if out.FailedEntryCount == 0 {
			return nil
		}
		var again []types.PutEventsRequestEntry
		for i, r := range out.Entries {
			if r.ErrorCode != nil && i < len(entries) {
				again = append(again, entries[i])
			}
		}
		if len(again) == 0 || try == tries {
			// The error code names the class (a throttle, an internal
			// failure); never the entry's content.
			code := ""
			for _, r := range out.Entries {
				if r.ErrorCode != nil {
					code = aws.ToString(r.ErrorCode)
					break
				}
			}
			return failure.Transient(failure.KindStoreUnavailable, 2*time.Second,
				fmt.Errorf("eventbus: %d of %d events not accepted (%s)", out.FailedEntryCount, len(entries), code))
		}
		entries = again
	}
}
