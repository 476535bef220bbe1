package warrant

import "time"

// FirmSettings are a firm's own rules for its runs. A firm that never saved
// any has DefaultFirmSettings.
type FirmSettings struct {
	FirmID string
	// SeparationOfDuties refuses a decision by the counsel who started the
	// run the warrant belongs to (403 self_approval). On by default.
	SeparationOfDuties bool
	// MonthlyBudgetNano is the firm's own monthly model budget in nano-USD
	// (monthly_budget_usd); nil: none set, the deployment's default
	// (FIRM_MONTHLY_BUDGET_USD) applies. One that does not parse reads as
	// zero.
	MonthlyBudgetNano *int64
	// MonthlyBudgetUSD is monthly_budget_usd as stored ("" when none): a
	// reservation is conditioned on it still being what its reserver read.
	MonthlyBudgetUSD string
	UpdatedAt        time.Time
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
