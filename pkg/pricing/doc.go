// Package pricing turns Bedrock token usage into an exact dollar cost so the
// per-run cost cap can stop a runaway agent. Money is integer nano-USD, prices
// are decimal strings in a strictly validated table, and every cost is rounded
// up so the cap is never under-counted. A model without a price is an error.
package pricing
