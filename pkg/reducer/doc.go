// Package reducer folds a run's ledger into its state. The stream reducer and
// the agent both call Apply, so the projection a lawyer sees and the state the
// agent acts on cannot drift apart: there is one set of rules, here.
//
// Apply is pure. It leaves a line's own integrity (strict JSON, its hash) to
// contracts.ParseEventLine, re-links the line to the state's head (so a caller
// that skipped ReadLedger still cannot fold a reordered or foreign line), and
// enforces the run's life cycle: started once, held on one warrant at a time,
// released only by that warrant, and immutable once terminal but for two
// records: counsel's reconciliation of an effect whose outcome was lost
// (effect.reconciled), and the destruction of the run's content with its
// data key (content.destroyed, once).
package reducer
