//go:build unix && !linux

package proc

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Group puts a child in its own process group. (Only Linux can also have
// the kernel kill it when this process dies.)
func Group() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Alive reports whether a process with this PID is running (a zombie is not).
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

// Children lists the processes whose parent is pid.
func Children(pid int) []int {
	out, err := exec.Command("ps", "-A", "-o", "pid=,ppid=").Output()
	if err != nil {
		return nil
	}
	var kids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		p, err1 := strconv.Atoi(f[0])
		pp, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && pp == pid {
			kids = append(kids, p)
		}
	}
	return kids
}
