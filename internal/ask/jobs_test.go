package ask

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestJobStatus: a job is running while its process lives, lost once that process is gone
// without recording an exit, and done or failed by the exit it recorded.
func TestJobStatus(t *testing.T) {
	store := &JobStore{Dir: t.TempDir()}
	status := func(pid int, exit *int) string {
		t.Helper()
		j, err := store.NewJob([]string{"codex"}, "q", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.SetPID(j, pid); err != nil {
			t.Fatal(err)
		}
		if exit != nil {
			if err := store.Finish(j.ID, *exit); err != nil {
				t.Fatal(err)
			}
		}
		got, err := store.Get(j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	// A process that has exited and been reaped: its pid names nothing (until reused,
	// which takes the whole pid space going round).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command(exe, "-test.run=^$")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	zero, one := 0, 1
	for _, c := range []struct {
		name string
		pid  int
		exit *int
		want string
	}{
		{"live process", os.Getpid(), nil, "running"},
		{"process gone", gone.Process.Pid, nil, "lost"},
		{"no process", 0, nil, "lost"},
		{"exit 0", gone.Process.Pid, &zero, "done"},
		{"exit 1", os.Getpid(), &one, "failed"},
	} {
		if got := status(c.pid, c.exit); got != c.want {
			t.Errorf("%s: status %q, want %q", c.name, got, c.want)
		}
	}
}
