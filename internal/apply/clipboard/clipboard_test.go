package clipboard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func fakeEnv(env map[string]string, goos string, tools ...string) Env {
	return Env{
		Getenv: func(k string) string { return env[k] },
		LookPath: func(name string) (string, error) {
			for _, t := range tools {
				if t == name {
					return "/usr/bin/" + name, nil
				}
			}
			return "", exec.ErrNotFound
		},
		GOOS: goos,
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		env     Env
		readCmd string
		want    string // tool name, "" for an error
	}{
		{"config command wins", fakeEnv(map[string]string{"DISPLAY": ":0"}, "linux", "xclip"), "cat /tmp/x", "readCommand"},
		{"wayland", fakeEnv(map[string]string{"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux", "wl-paste", "xclip"), "", "wl-paste"},
		{"wayland without wl-paste falls back to X", fakeEnv(map[string]string{"WAYLAND_DISPLAY": "w", "DISPLAY": ":0"}, "linux", "xclip"), "", "xclip"},
		{"xclip before xsel", fakeEnv(map[string]string{"DISPLAY": ":0"}, "linux", "xsel", "xclip"), "", "xclip"},
		{"xsel", fakeEnv(map[string]string{"DISPLAY": ":0"}, "linux", "xsel"), "", "xsel"},
		{"macos", fakeEnv(nil, "darwin", "pbpaste"), "", "pbpaste"},
		{"windows", fakeEnv(nil, "windows", "powershell.exe"), "", "powershell.exe"},
		{"headless linux", fakeEnv(nil, "linux", "xclip"), "", ""},
		{"X without tools", fakeEnv(map[string]string{"DISPLAY": ":0"}, "linux"), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(tc.env, tc.readCmd)
			if tc.want == "" {
				var na *NotAvailableError
				if !errors.As(err, &na) || na.Hint == "" {
					t.Fatalf("Detect = %v, %v; want NotAvailableError with a hint", got, err)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("Detect = %+v, %v; want %s", got, err, tc.want)
			}
		})
	}
	wsl := fakeEnv(nil, "linux", "powershell.exe")
	wsl.WSL = true
	if got, err := Detect(wsl, ""); err != nil || got.Name != "powershell.exe" {
		t.Errorf("WSL: %v, %v", got, err)
	}
}

type collector struct {
	mu   sync.Mutex
	got  []string
	errs []string
}

func (c *collector) change(s string) { c.mu.Lock(); c.got = append(c.got, s); c.mu.Unlock() }
func (c *collector) err(e error)     { c.mu.Lock(); c.errs = append(c.errs, e.Error()); c.mu.Unlock() }
func (c *collector) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func waitFor(t *testing.T, cond func() bool, c *collector) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("timed out; changes %q, errors %q", c.got, c.errs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchPollingSkipsInitialContent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clip")
	if err := os.WriteFile(file, []byte("already there"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := file + ".read"
	tool, err := Detect(Env{}, "cat "+file+"; touch "+marker)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{}
	done := make(chan error)
	go func() { done <- Watch(ctx, tool, 10*time.Millisecond, c.change, c.err) }()
	// Change the clipboard only once watch has read what was there at start.
	waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil }, c)
	put := func(s string) {
		t.Helper()
		if err := os.WriteFile(file+".tmp", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	// readsAfter waits until watch has read the clipboard twice more.
	readsAfter := func() {
		for range 2 {
			os.Remove(marker)
			waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil }, c)
		}
	}
	put("first")
	waitFor(t, func() bool { return len(c.snapshot()) == 1 }, c)
	put("first") // the same text again is not a change
	readsAfter()
	put("second")
	waitFor(t, func() bool { return len(c.snapshot()) >= 2 }, c)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.snapshot(), ","); got != "first,second" {
		t.Errorf("changes = %q, want first,second (not the initial content, no repeats)", got)
	}
}

func TestWatchEventsReadOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "clip")
	fifo := filepath.Join(dir, "events")
	if err := os.WriteFile(file, []byte("initial"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The event command prints a line whenever the "events" file grows, like wl-paste --watch.
	tool := &Tool{
		Name:  "fake-wl",
		Read:  []string{"cat", file},
		Watch: []string{"sh", "-c", "touch " + fifo + "; tail -f " + fifo},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &collector{}
	done := make(chan error)
	go func() { done <- Watch(ctx, tool, time.Hour, c.change, c.err) }()
	waitFor(t, func() bool { _, err := os.Stat(fifo); return err == nil }, c)
	time.Sleep(50 * time.Millisecond)
	appendLine := func() {
		f, err := os.OpenFile(fifo, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("changed\n")
		f.Close()
	}
	if err := os.WriteFile(file, []byte("new text"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendLine()
	waitFor(t, func() bool { return len(c.snapshot()) == 1 }, c)
	cancel()
	<-done
	if got := c.snapshot(); got[0] != "new text" {
		t.Errorf("got %q", got)
	}
}

func TestReadWithEmptyXclip(t *testing.T) {
	tool := &Tool{Name: "xclip", Read: []string{"sh", "-c", "echo 'Error: target STRING not available' >&2; exit 1"}}
	got, err := ReadWith(context.Background(), tool)
	if err != nil || got != "" {
		t.Errorf("ReadWith = %q, %v; want empty clipboard", got, err)
	}
	tool.Read = []string{"sh", "-c", "echo 'cannot open display' >&2; exit 1"}
	if _, err := ReadWith(context.Background(), tool); err == nil || !strings.Contains(err.Error(), "cannot open display") {
		t.Errorf("error = %v, want the tool's stderr", err)
	}
}

func TestWatchFallsBackToPollingWhenEventsFail(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clip")
	if err := os.WriteFile(file, []byte("start"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := &Tool{
		Name:   "fake-x11",
		Read:   []string{"cat", file},
		Notify: func(context.Context, func()) error { return errors.New("the X server has no XFIXES extension") },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &collector{}
	done := make(chan error)
	go func() { done <- Watch(ctx, tool, 10*time.Millisecond, c.change, c.err) }()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.errs) == 1 }, c)
	if err := os.WriteFile(file+".tmp", []byte("after"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(c.snapshot()) == 1 }, c)
	cancel()
	<-done
	if !strings.Contains(c.errs[0], "polling every 10ms instead") || c.snapshot()[0] != "after" {
		t.Errorf("errs %q changes %q", c.errs, c.snapshot())
	}
}
