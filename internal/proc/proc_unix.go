//go:build unix

package proc

import (
	"fmt"
	"os"
	"syscall"
)

// KillGroup sends sig to the process group pid leads, then to pid itself in
// case it has left its group. A pid that is gone is not an error: there is
// nothing to report.
func KillGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return // -0 and -(-1) would name this process's group, or every process
	}
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// Lock takes an exclusive advisory lock on the file at path (created if
// missing), waiting for another process's to be released; unlock releases
// it. The kernel releases it too when the process dies, so a killed holder
// never leaves it taken.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}
