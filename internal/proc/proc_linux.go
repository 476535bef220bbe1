package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Group puts a child in its own process group and has the kernel kill it if
// this process dies without stopping it. (Pdeathsig fires when the thread
// that started the child exits; Go keeps its threads, so in practice that
// is the process.)
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Alive reports whether a process with this PID is running (a zombie is not).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	state, _, ok := stat(pid)
	return ok && state != 'Z' && state != 'X' && state != 'x'
}

// Children lists the live processes whose parent is pid.
func Children(pid int) []int {
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
