package contracts

import (
	"bytes"
	"errors"
	"testing"
)

// Issue 26: content.destroyed says why a run's content was destroyed,
// closed and checked field by field: under a retention (its days and whose
// it was, nobody named), or on instruction (two different users, no
// retention), and when backups stop holding the key. Each bad line is
// refused where it is made and when a stored one is read, naming the
// field; the line is in the clear, sealed run or not.
func TestContentDestroyedContract(t *testing.T) {
	const counsel = "4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a"
	const until = "2027-01-06T10:00:00.123Z"
	retention := func(f func(*ContentDestroyed)) *ContentDestroyed {
		e := &ContentDestroyed{MatterID: uMatter, Reason: DestroyedRetention, RetentionDays: 30, RetentionSource: RetentionOfFirm, BackupsUntil: until}
		if f != nil {
			f(e)
		}
		return e
	}
	instruction := func(f func(*ContentDestroyed)) *ContentDestroyed {
		e := &ContentDestroyed{MatterID: uMatter, Reason: DestroyedInstruction, RequestedBy: uUser, ConfirmedBy: counsel, BackupsUntil: until}
		if f != nil {
			f(e)
		}
		return e
	}
	for name, c := range map[string]struct {
		ev   *ContentDestroyed
		path string // "" when the line is good
	}{
		"under the matter's retention":              {retention(func(e *ContentDestroyed) { e.RetentionSource = RetentionOfMatter }), ""},
		"under the firm's retention":                {retention(nil), ""},
		"on instruction":                            {instruction(nil), ""},
		"no matter":                                 {retention(func(e *ContentDestroyed) { e.MatterID = "" }), "payload.matter_id"},
		"a matter that is not a UUID":               {retention(func(e *ContentDestroyed) { e.MatterID = "M-1" }), "payload.matter_id"},
		"no reason":                                 {retention(func(e *ContentDestroyed) { e.Reason = "" }), "payload.reason"},
		"another reason":                            {retention(func(e *ContentDestroyed) { e.Reason = "because" }), "payload.reason"},
		"a retention of no days":                    {retention(func(e *ContentDestroyed) { e.RetentionDays = 0 }), "payload.retention_days"},
		"a retention past 100 years":                {retention(func(e *ContentDestroyed) { e.RetentionDays = MaxRetentionDays + 1 }), "payload.retention_days"},
		"a retention of nobody's":                   {retention(func(e *ContentDestroyed) { e.RetentionSource = "" }), "payload.retention_source"},
		"a retention of the user's":                 {retention(func(e *ContentDestroyed) { e.RetentionSource = "user" }), "payload.retention_source"},
		"a retention someone asked for":             {retention(func(e *ContentDestroyed) { e.RequestedBy = uUser }), "payload.requested_by"},
		"a retention someone confirmed":             {retention(func(e *ContentDestroyed) { e.ConfirmedBy = counsel }), "payload.requested_by"},
		"an instruction nobody gave":                {instruction(func(e *ContentDestroyed) { e.RequestedBy = "" }), "payload.requested_by"},
		"an instruction nobody confirmed":           {instruction(func(e *ContentDestroyed) { e.ConfirmedBy = "" }), "payload.confirmed_by"},
		"an instruction confirmed by its requester": {instruction(func(e *ContentDestroyed) { e.ConfirmedBy = uUser }), "payload.confirmed_by"},
		"an instruction with a retention":           {instruction(func(e *ContentDestroyed) { e.RetentionDays = 30 }), "payload.retention_days"},
		"an instruction with a retention source":    {instruction(func(e *ContentDestroyed) { e.RetentionSource = RetentionOfFirm }), "payload.retention_days"},
		"no backups time":                           {retention(func(e *ContentDestroyed) { e.BackupsUntil = "" }), "payload.backups_until"},
		"a backups time in another form":            {retention(func(e *ContentDestroyed) { e.BackupsUntil = "2027-01-06" }), "payload.backups_until"},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := fixedChain().Append(c.ev)
			if c.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got, err := ParseEventLine(l.Raw)
				if err != nil || got.Sealed || *got.Event.(*ContentDestroyed) != *c.ev {
					t.Fatalf("read back: %+v %v", got.Event, err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != c.path {
				t.Fatalf("%v, want an error at %s", err, c.path)
			}
		})
	}

	// A stored line made bad, its hash made good: refused on reading.
	l, err := fixedChain().Append(instruction(nil))
	if err != nil {
		t.Fatal(err)
	}
	forged := reseal(t, bytes.Replace(l.Raw, []byte(`"confirmed_by":"`+counsel+`"`), []byte(`"confirmed_by":"`+uUser+`"`), 1))
	var fe *FieldError
	if _, err := ParseEventLine(forged); !errors.As(err, &fe) || fe.Path != "payload.confirmed_by" {
		t.Fatalf("a stored self-confirmed destruction read back: %v, want an error at payload.confirmed_by", err)
	}

	// In a sealed run the line is schema 2 with nothing sealed: it reads
	// whole without the key.
	c := fixedChain()
	c.Sealer = runKey(t)
	sl, err := c.Append(retention(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEventLine(sl.Raw)
	if err != nil || got.Sealed || got.Event.(*ContentDestroyed).MatterID != uMatter || !bytes.Contains(sl.Raw, []byte(`"retention_days":30`)) {
		t.Fatalf("a sealed run's content.destroyed: %+v %v\n%s", got, err, sl.Raw)
	}
}
