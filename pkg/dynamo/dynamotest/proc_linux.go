package dynamotest

import "syscall"

// sysProcAttr puts moto_server in its own process group (so stopping it
// reaches any child it forks) and has the kernel kill it if the test binary
// dies without running Main's cleanup. (Pdeathsig fires when the thread
// that started it exits; Go keeps its threads, so in practice that is the
// process.) The moto_server shim execs down to python, keeping the pid.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int, force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
