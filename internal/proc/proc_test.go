//go:build unix

package proc_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// child is a process started in a group of its own.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait has returned (it is reaped)
	err  error         // Wait's error, once done
}

// start runs name args in a group of its own; the test's cleanup kills the
// group and reaps it.
func start(t *testing.T, name string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(name, args...), done: make(chan struct{})}
	c.cmd.SysProcAttr = proc.Group()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		proc.KillGroup(c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	})
	return c
}

// wait waits for the child to be reaped and returns Wait's error.
func (c *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit within 10s")
		return nil
	}
}

// TestKillGroup starts sleep in a group of its own, kills the group, and
// finds it gone and reaped: not alive, no zombie left.
func TestKillGroup(t *testing.T) {
	c := start(t, "sleep", "30")
	pid := c.cmd.Process.Pid
	if !proc.Alive(pid) {
		t.Fatalf("sleep (pid %d) is not alive right after Start", pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("sleep's process group is %d (%v), want its own, %d", pgid, err, pid)
	}
	proc.KillGroup(pid, syscall.SIGKILL)
	err := c.wait(t)
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("sleep ended with %v, want killed by SIGKILL", err)
	}
	if proc.Alive(pid) {
		t.Fatalf("pid %d is alive after KillGroup and Wait", pid)
	}
	if zombie(pid) {
		t.Fatalf("pid %d is a zombie after Wait", pid)
	}
}

// TestKillGroupReachesGrandchildren: a shell that forks sleep leaves it in
// the shell's group; killing the group ends both, and Children saw the
// sleep under the shell.
func TestKillGroupReachesGrandchildren(t *testing.T) {
	c := start(t, "sh", "-c", "sleep 30 & wait")
	sh := c.cmd.Process.Pid
	var kids []int
	if !eventually(5*time.Second, func() bool { kids = proc.Children(sh); return len(kids) > 0 }) {
		t.Fatalf("Children(%d) found no child of the shell", sh)
	}
	for _, k := range kids {
		if pgid, err := syscall.Getpgid(k); err != nil || pgid != sh {
			t.Fatalf("child %d is in group %d (%v), want the shell's %d", k, pgid, err, sh)
		}
	}
	proc.KillGroup(sh, syscall.SIGTERM)
	_ = c.wait(t)
	for _, k := range kids {
		// The orphaned sleep is reaped by init (or a subreaper), not by us:
		// a zombie in between is not alive.
		if !eventually(5*time.Second, func() bool { return !proc.Alive(k) }) {
			t.Errorf("grandchild %d is alive after its group was killed", k)
		}
	}
	if proc.Alive(sh) {
		t.Errorf("shell %d is alive after KillGroup and Wait", sh)
	}
}

// TestAliveZombie: a child that has exited but is not reaped yet is a
// zombie, and a zombie is not alive.
func TestAliveZombie(t *testing.T) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = proc.Group()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	if !eventually(5*time.Second, func() bool { return zombie(pid) }) {
		t.Skip("could not observe the exited child as a zombie")
	}
	if proc.Alive(pid) {
		t.Fatalf("zombie %d reported alive", pid)
	}
}

func TestAliveEdges(t *testing.T) {
	if !proc.Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	for _, pid := range []int{0, -1} {
		if proc.Alive(pid) {
			t.Errorf("Alive(%d) = true", pid)
		}
	}
	if !slices.Contains(proc.Children(os.Getppid()), os.Getpid()) {
		t.Errorf("Children(%d) lacks this process %d", os.Getppid(), os.Getpid())
	}
}

// zombie reports whether ps shows pid in state Z.
func zombie(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(string(bytes.TrimSpace(out)), "Z")
}
