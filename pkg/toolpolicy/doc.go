// Package toolpolicy decides, before any tool runs, whether a model's tool call
// may run, must wait for a lawyer's signed warrant, or is refused. It is
// fail-closed: a tool the policy does not name gets the default decision, and
// the default may never allow.
package toolpolicy
