package warrant

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// FirmSettings are a firm's own rules for its runs. A firm that never saved
// any has DefaultFirmSettings.
type FirmSettings struct {
	FirmID string
	// SeparationOfDuties refuses a decision by the counsel who started the
	// run the warrant belongs to (403 self_approval). On by default.
	SeparationOfDuties bool
	// Domains are the firm's own e-mail domains (lower case): a recipient
	// outside them is outside the firm, which the risk policy's rules weigh.
	// None saved: every recipient is outside the firm.
	Domains []string
	// MonthlyBudgetNano is the firm's own monthly model budget in nano-USD
	// (monthly_budget_usd); nil: none set, the deployment's default
	// (FIRM_MONTHLY_BUDGET_USD) applies. One that does not parse reads as
	// zero.
	MonthlyBudgetNano *int64
	// MonthlyBudgetUSD is monthly_budget_usd as stored ("" when none): a
	// reservation is conditioned on it still being what its reserver read.
	MonthlyBudgetUSD string
	// RetentionDays is the firm's default retention (retention_days): a
	// finished run's content is destroyed this many days after the run
	// ended, unless its matter names its own. nil: kept.
	RetentionDays *int
	UpdatedAt     time.Time
}

// Limit is the limit a reservation is held to, as read from fs.
func (fs FirmSettings) Limit(deploymentDefault *int64) BudgetLimit {
	return BudgetLimit{Nano: fs.MonthlyLimit(deploymentDefault), FirmUSD: fs.MonthlyBudgetUSD}
}

// MonthlyLimit is the firm's monthly budget in nano-USD: its own when it set
// one, else the deployment's default (nil: none). With neither it is zero,
// so every model call is refused: no limit configured is not "unlimited".
func (fs FirmSettings) MonthlyLimit(deploymentDefault *int64) int64 {
	switch {
	case fs.MonthlyBudgetNano != nil:
		return *fs.MonthlyBudgetNano
	case deploymentDefault != nil:
		return *deploymentDefault
	}
	return 0
}

// DefaultFirmSettings are the settings of a firm that saved none: the
// strict ones.
func DefaultFirmSettings(firm string) FirmSettings {
	return FirmSettings{FirmID: firm, SeparationOfDuties: true}
}

// Matter is what the runtime knows of a matter beyond its id: whose matter
// it is. The firm's practice-management system writes it; a run on a matter
// with no record has no client domains, so every recipient is outside the
// client.
type Matter struct {
	FirmID, MatterID string
	Title            string
	// ClientDomains are the e-mail domains of the matter's client (lower
	// case).
	ClientDomains []string
	// RetentionDays is the matter's own retention (days after a run ends),
	// which overrides the firm's; nil: the firm's applies.
	RetentionDays *int
	UpdatedAt     time.Time
	// Version counts the matter's writes from 1 (its creation); every
	// write names the version it replaces. UpdatedBy (a user id) and
	// UpdatedByName (shown, never compared) wrote this version.
	Version                  int64
	UpdatedBy, UpdatedByName string
}

// Hold is a legal hold on a matter: while it is in place no run of the
// matter loses its content, whatever races it (pkg/dynamo conditions every
// destruction on the hold's absence). By (a user id) placed it at PlacedAt
// for Reason.
type Hold struct {
	FirmID, MatterID string
	By, ByName       string // ByName is shown, never compared
	Reason           string
	PlacedAt         time.Time
}

// MaxHoldReason bounds a hold's reason (characters).
const MaxHoldReason = 2000

// HoldEvent is one placement or release of a matter's hold, as the
// matter's hold history keeps it: who, when, and the placement's reason.
type HoldEvent struct {
	FirmID, MatterID string
	Action           string // HoldPlaced or HoldReleased
	By, ByName       string
	Reason           string
	At               time.Time
}

// A hold history's actions (closed).
const (
	HoldPlaced   = "placed"
	HoldReleased = "released"
)

// MaxRetentionDays bounds a retention (100 years).
const MaxRetentionDays = 36500

// CheckRetention validates a retention for field: absent (keep), or 1 to
// MaxRetentionDays days.
func CheckRetention(field string, days *int) error {
	if days != nil && (*days < 1 || *days > MaxRetentionDays) {
		return fmt.Errorf("field %s: a retention is 1 to %d days after a run ends (absent: kept)", field, MaxRetentionDays)
	}
	return nil
}

// Retention is the retention that applies to a run of matter m (zero
// Matter: no record) under the firm's settings fs: the matter's own, else
// the firm's, with where it came from ("matter" or "firm"); ok false: the
// content is kept.
func Retention(fs FirmSettings, m Matter) (days int, source string, ok bool) {
	switch {
	case m.RetentionDays != nil:
		return *m.RetentionDays, "matter", true
	case fs.RetentionDays != nil:
		return *fs.RetentionDays, "firm", true
	}
	return 0, "", false
}

// MatterState is what a version of a matter says.
type MatterState struct {
	Title         string
	ClientDomains []string
	RetentionDays *int
}

// MatterVersion is one write of a matter: who made it, when, and what the
// matter said before (nil: the write created it) and after.
type MatterVersion struct {
	FirmID, MatterID         string
	Version                  int64
	UpdatedBy, UpdatedByName string
	UpdatedAt                time.Time
	Before                   *MatterState
	After                    MatterState
}

// domainPattern is a lower-case DNS name with at least two labels.
var domainPattern = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// CheckDomains validates a list of e-mail domains (lower case, DNS names,
// no duplicates, at most 100) for field, naming the first that is not.
func CheckDomains(field string, domains []string) error {
	if len(domains) > 100 {
		return fmt.Errorf("field %s: at most 100 domains", field)
	}
	for i, d := range domains {
		if len(d) > 253 || !domainPattern.MatchString(d) {
			return fmt.Errorf("field %s[%d]: not a lower-case domain name", field, i)
		}
		if slices.Contains(domains[:i], d) {
			return fmt.Errorf("field %s[%d]: listed twice", field, i)
		}
	}
	return nil
}

// DestructionOrder is a firm's instruction to destroy every run's content
// of a matter now (POST /v1/matters/{matter_id}/destroy): one user
// requests it, another counsel confirms it before it expires, and it is
// carried out run by run (by the confirming call, and by the sweeper for
// whatever that call did not finish) until it is done.
type DestructionOrder struct {
	FirmID, MatterID             string
	Status                       string // OrderRequested, OrderConfirmed or OrderDone
	RequestedBy, RequestedByName string
	Reason                       string
	RequestedAt, ExpiresAt       time.Time
	ConfirmedBy, ConfirmedByName string
	ConfirmedAt                  time.Time
	DoneAt                       time.Time
}

// A destruction order's states (closed).
const (
	OrderRequested = "requested"
	OrderConfirmed = "confirmed"
	OrderDone      = "done"
)

// DestructionRequestTTL is how long a request to destroy a matter's content
// waits for another counsel's confirmation.
const DestructionRequestTTL = 24 * time.Hour

// MaxDestructionReason bounds a destruction request's reason (characters).
const MaxDestructionReason = 2000
