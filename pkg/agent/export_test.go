package agent

// InputBound is inputBound, for the external tests that recompute a
// reservation from the request the model received.
var InputBound = inputBound
