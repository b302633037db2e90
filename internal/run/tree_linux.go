package run

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// descendants lists every live process below pid by walking parent links in
// /proc: a child that moved to its own session or group is still found while
// its parent lives.
func descendants(pid int) []procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procInfo{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procStat(p)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		children[st.ppid] = append(children[st.ppid], st)
	}
	var out []procInfo
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// killTree kills pid's process group and every process below pid, whatever
// group or session it moved to. A descendant is killed only if it still has
// the start time the walk saw, so a reused pid is never hit.
func killTree(pid int) {
	below := descendants(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, d := range below {
		if st, err := procStat(d.pid); err == nil && st.start == d.start {
			_ = syscall.Kill(d.pid, syscall.SIGKILL)
		}
	}
}

// reapTreeOnExit blocks until the command's own process exits, then kills
// what is left in its process group: a friend's leftover tool, or a
// grandchild holding stdout open, goes with it instead of outliving relay.
// The exit is observed without reaping (WNOWAIT), so the pid cannot be reused
// before the kill; Wait reaps the leader afterwards. (Its children have been
// handed to init by then, so only the group can be reached, not a child that
// moved to its own session; the timeout path, which runs while the leader
// lives, walks the whole tree.)
func reapTreeOnExit(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil {
			killGroupPID(pid)
		}
		return
	}
}

// reapsBeforeWait: reapTreeOnExit kills the group before Wait, so nothing is
// left to kill after it (when the pid may already be reused).
const reapsBeforeWait = true
