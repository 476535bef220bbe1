// Package proc is the one place that knows how this repository's tooling
// starts and ends child processes: in a process group of their own, so that
// ending one ends whatever it forked (a compiler's workers, an emulator's
// bootstrap, a Python server's threads), signalled by PID and never by name.
//
//   - Group is the SysProcAttr for such a child: its own process group and,
//     on Linux, SIGKILL from the kernel if this process dies first.
//   - KillGroup signals a child's group, then the child itself (in case it
//     has left its group).
//   - Alive tells whether a PID is running; a zombie is not.
//   - Children lists the live processes whose parent is a PID.
//
// Linux reads /proc; other Unix systems ask ps. Elsewhere (Windows) there
// are no process groups: Group is nil, KillGroup kills the process alone and
// Children finds nothing.
package proc
