package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startGroup starts a process in its own group and returns its identity.
func startGroup(t *testing.T) (*exec.Cmd, Group) {
	t.Helper()
	c := exec.Command("sh", "-c", "sleep 300 & sleep 300; wait")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
	g, err := identify(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return c, g
}

func TestKillGroupKillsEveryMemberAndWaits(t *testing.T) {
	_, g := startGroup(t)
	if err := KillGroup(g); err != nil {
		t.Fatal(err)
	}
	if ms, err := members(g.PGID); err != nil || len(ms) != 0 {
		t.Fatalf("after KillGroup the group still has %v (%v)", ms, err)
	}
}

// A recorded group is data: when its identity does not match the process
// now using that number, nothing is killed.
func TestKillGroupLeavesOthersAlone(t *testing.T) {
	_, g := startGroup(t)
	for name, bad := range map[string]Group{
		"other start": {PGID: g.PGID, Start: g.Start + 1, Boot: g.Boot},
		"other boot":  {PGID: g.PGID, Start: g.Start, Boot: "00000000-0000-0000-0000-000000000000"},
		"no start":    {PGID: g.PGID, Boot: g.Boot},
		"pgid 1":      {PGID: 1, Start: g.Start, Boot: g.Boot},
	} {
		_ = KillGroup(bad)
		if ms, _ := members(g.PGID); len(ms) == 0 {
			t.Fatalf("%s: KillGroup killed a group whose identity did not match", name)
		}
	}
}

func TestParseGroup(t *testing.T) {
	for _, bad := range []string{"", "1 2 abc", "-5 2 abc", "10 0 abc", "10 2 ../x", "10 2", "x 2 abc", "10 2 abc extra"} {
		if _, err := ParseGroup(bad); err == nil {
			t.Errorf("ParseGroup(%q) accepted it", bad)
		}
	}
	g := Group{PGID: 1234, Start: 99, Boot: "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"}
	if got, err := ParseGroup(g.String()); err != nil || got != g {
		t.Errorf("ParseGroup(String()) = %v, %v", got, err)
	}
}

// Started runs before the script: a failing Started means the script never ran.
func TestStartedGatesTheScript(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	c := Shell(context.Background(), "", "touch "+mark)
	var got Group
	c.Started = func(g Group) error { got = g; return syscall.EPERM }
	if err := c.Run(); err == nil || !strings.Contains(err.Error(), "record its process group") {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the script ran although its group was not recorded")
	}
	if got.PGID == 0 || got.Start == 0 || got.Boot == "" {
		t.Fatalf("Started got %+v", got)
	}
	c = Shell(context.Background(), "", "touch "+mark)
	c.Started = func(Group) error { return nil }
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the script did not run once recorded: %v", err)
	}
}
