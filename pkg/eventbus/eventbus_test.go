package eventbus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/seed-f6d3920e/warrant/pkg/eventbus"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus/eventbustest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

func client(url string) *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
}

// TestPublish: 23 events go out in order, ten a request, through the real
// SDK; entries EventBridge refuses are sent again; refused three times, the
// publish fails as a transient error (the caller's record is retried).
func TestPublish(t *testing.T) {
	srv := eventbustest.New()
	defer srv.Close()
	bus := eventbus.New(client(srv.URL()), "warrant-test")
	var evs []notify.Event
	for i := range 23 {
		evs = append(evs, notify.Event{Type: notify.RunCompleted, ID: fmt.Sprint(i), FirmID: "f", RunID: "r",
			OccurredAt: "2026-12-03T10:00:00.000Z", DeskURL: "https://d/desk"})
	}
	srv.FailNext = 2 // two entries of the first request refused, then accepted
	if err := bus.Publish(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	got := srv.Entries()
	if len(got) != 23 {
		t.Fatalf("%d entries accepted, want 23", len(got))
	}
	seen := map[string]bool{}
	for _, e := range got {
		var ev notify.Event
		if err := json.Unmarshal([]byte(e.Detail), &ev); err != nil || e.Source != notify.Source || e.DetailType != notify.RunCompleted || e.EventBusName != "warrant-test" {
			t.Fatalf("entry %+v %v", e, err)
		}
		seen[ev.ID] = true
	}
	if len(seen) != 23 {
		t.Fatalf("%d distinct events, want 23", len(seen))
	}
	srv.FailNext = 3
	err := bus.Publish(context.Background(), evs[:1])
	if kind, retryable, _ := failure.Classify(err); err == nil || kind != failure.KindStoreUnavailable || !retryable {
		t.Fatalf("refused three times: %v (%s, retryable %v)", err, kind, retryable)
	}
}
