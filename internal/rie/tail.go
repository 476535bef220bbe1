package rie

import (
	"io"
	"sync"
)

// tailWriter fans the output out to sinks and keeps its last max bytes.
type tailWriter struct {
	mu    sync.Mutex
	sinks []io.Writer
	buf   []byte
	max   int
}

// Write copies p to every sink, ignoring their errors, and keeps it.
func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sinks {
		_, _ = s.Write(p) // a failing log sink must not stop the emulator
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// last returns up to the last n bytes kept (all of them for n <= 0).
func (t *tailWriter) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if n > 0 && len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
