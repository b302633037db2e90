package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// groupWait bounds how long KillGroup waits for killed processes to go.
const groupWait = 10 * time.Second

// identify returns pid's group identity, read from /proc.
func identify(pid int) (Group, error) {
	st, err := procStat(pid)
	if err != nil {
		return Group{}, err
	}
	boot, err := bootID()
	if err != nil {
		return Group{}, err
	}
	return Group{PGID: st.pgrp, Start: st.start, Boot: boot}, nil
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read the boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

type procInfo struct {
	pid   int
	state byte
	ppid  int
	pgrp  int
	start uint64
}

// procStat parses /proc/<pid>/stat; the command name may hold spaces and
// parentheses, so fields are counted after its last ')'.
func procStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err0 := strconv.Atoi(f[1])
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return procInfo{pid: pid, state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, nil
}

// exited reports whether pid, which signal 0 still finds, has ended: a zombie, or gone
// since the signal. Without a /proc to read, it cannot tell and says no.
func exited(pid int) bool {
	st, err := procStat(pid)
	if errors.Is(err, fs.ErrNotExist) {
		_, self := os.Stat("/proc/self/stat")
		return self == nil
	}
	return err == nil && (st.state == 'Z' || st.state == 'X')
}

// members lists the live (not zombie) processes in group pgid.
func members(pgid int) ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procStat(pid)
		if err != nil || st.pgrp != pgid || st.state == 'Z' || st.state == 'X' {
			continue // gone meanwhile, another group, or dead and unable to write
		}
		out = append(out, st)
	}
	return out, nil
}

// KillGroup kills every process of g and waits until none is left. It
// acts only when g is still the group relay recorded: same boot, and the
// leader (if alive) started when recorded, and no member older than it.
// Anything else is left alone and reported, never killed.
func KillGroup(g Group) error {
	if g.PGID <= 1 || g.Start == 0 || g.Boot == "" {
		return fmt.Errorf("process group %v is incomplete; not killing anything", g)
	}
	boot, err := bootID()
	if err != nil {
		return err
	}
	if boot != g.Boot {
		return nil // recorded before a reboot: that group is long gone
	}
	if leader, err := procStat(g.PGID); err == nil && leader.start != g.Start {
		return nil // the number now belongs to another process: ours is gone
	}
	ms, err := members(g.PGID)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.start < g.Start {
			return fmt.Errorf("process %d in group %d is older than the recorded group; not killing it", m.pid, g.PGID)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	if err := syscall.Kill(-g.PGID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", g.PGID, err)
	}
	return waitGroupGone(g.PGID)
}

// waitGroupGone polls until no live process is left in pgid: a killed
// process needs its parent (or init) to notice before it leaves /proc.
func waitGroupGone(pgid int) error {
	deadline := time.Now().Add(groupWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ms, err := members(pgid)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still has %d process(es) %s after SIGKILL", pgid, len(ms), groupWait)
		}
		time.Sleep(delay)
	}
}
