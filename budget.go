package warrant

import "time"

// A firm's model spend is held to a monthly budget (UTC calendar months) by
// reservation: before each model call the worker reserves the call's worst
// case against the month's budget, and settles it to the call's real cost in
// the write that records the call's model.usage line. A call whose
// reservation does not fit is never made (ErrFirmBudgetExceeded).

// MonthLayout names a budget month: "2006-01", UTC.
const MonthLayout = "2006-01"

// MonthOf is the budget month t falls in.
func MonthOf(t time.Time) string { return t.UTC().Format(MonthLayout) }

// Reservation is the worst case of one model call, held against its firm's
// budget for Month from just before the call until the call's usage is
// settled, the worker releases it (the call failed), or the sweeper does
// (the worker was lost: past ExpiresAt, the worker's lease end).
type Reservation struct {
	FirmID, RunID string
	// ID is fresh for every call (a UUID): a call retried by another worker
	// after a crash is a new reservation.
	ID    string
	Month string
	// Turn is the model call's turn in the run.
	Turn int64
	// Owner is the worker (its lease owner id) that reserved and may settle.
	Owner      string
	AmountNano int64
	ExpiresAt  time.Time
	CreatedAt  time.Time
}

// BudgetLimit is a firm's monthly limit as a reserver read it: Nano, from
// the firm's settings (FirmUSD, its monthly_budget_usd as stored) or, when
// FirmUSD is empty, the deployment's default. A reservation is conditioned
// on the settings still saying FirmUSD, so a changed budget is never missed.
type BudgetLimit struct {
	Nano    int64
	FirmUSD string
}

// Budget is a firm's budget for one month as stored: the limit in force
// when it was last applied, what settled calls spent, what open
// reservations hold, and what is left (HeadroomNano = LimitNano - SpentNano
// - ReservedNano). A month in which nothing was reserved yet is all zero
// with Exists false.
type Budget struct {
	FirmID, Month                                    string
	Exists                                           bool
	LimitNano, SpentNano, ReservedNano, HeadroomNano int64
	UpdatedAt                                        time.Time
	// Open are the month's open reservations, oldest first, at most as
	// many as asked for; More says there are others.
	Open []Reservation
	More bool
}
