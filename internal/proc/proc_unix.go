//go:build unix

package proc

import "syscall"

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
