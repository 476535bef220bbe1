package rie

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the emulator in its own process group and has the kernel
// kill it if this process dies without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(pid int, sig syscall.Signal) {
	// The group first (the emulator and the bootstrap each lead one), then
	// the process itself in case it has left its group.
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// stat returns the state and parent PID of pid from /proc/<pid>/stat.
func stat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	state, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X' && state != 'x'
}

// childrenOf lists the live processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := stat(p); ok && ppid == pid && state != 'Z' {
			kids = append(kids, p)
		}
	}
	return kids
}
