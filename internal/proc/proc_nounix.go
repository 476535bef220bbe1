//go:build !unix

package proc

import (
	"os"
	"syscall"
)

// Group is nil: there are no process groups here.
func Group() *syscall.SysProcAttr { return nil }

// KillGroup kills the process pid alone, whatever sig is: there is no group
// to signal and no other signal to send.
func KillGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// Alive reports whether a process with this PID can be found.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// Children finds nothing here.
func Children(int) []int { return nil }

// Lock creates the file at path and returns: without flock there is no
// lock to take here, so concurrent callers are not kept apart.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}
