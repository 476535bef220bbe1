package warrant

import "time"

// FirmSettings are a firm's own rules for its runs. A firm that never saved
// any has DefaultFirmSettings.
type FirmSettings struct {
	FirmID string
	// SeparationOfDuties refuses a decision by the counsel who started the
	// run the warrant belongs to (403 self_approval). On by default.
	SeparationOfDuties bool
	UpdatedAt          time.Time
}

// DefaultFirmSettings are the settings of a firm that saved none: the
// strict ones.
func DefaultFirmSettings(firm string) FirmSettings {
	return FirmSettings{FirmID: firm, SeparationOfDuties: true}
}
