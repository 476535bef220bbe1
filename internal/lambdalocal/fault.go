package lambdalocal

// Fault is what the endpoint does with one Invoke request instead of
// serving it plainly (Options.Fault).
type Fault int

const (
	// NoFault serves the request.
	NoFault Fault = iota
	// Throttle answers 429 TooManyRequestsException, as Lambda does when
	// a concurrency limit is reached: the function is not called.
	Throttle
	// ServiceError answers 500 ServiceException: the function is not
	// called (Lambda's callers cannot know that).
	ServiceError
	// DropAnswer runs the function, then closes the connection without
	// answering: the call ran and its answer is lost.
	DropAnswer
)
