package clipboard

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startXvfb runs a private X server and returns its DISPLAY, or skips.
func startXvfb(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		t.Skip("Xvfb not installed (apt-get install -y xvfb xclip xsel); skipping the real X clipboard test")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "640x480x24")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("Xvfb did not report its display: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

func TestWatchRealX11(t *testing.T) {
	display := startXvfb(t)
	for _, name := range []string{"xclip", "xsel"} {
		t.Run(name, func(t *testing.T) {
			for _, tool := range []string{name, "xclip"} {
				if _, err := exec.LookPath(tool); err != nil {
					t.Skipf("%s not installed", tool)
				}
			}
			t.Setenv("DISPLAY", display)
			t.Setenv("WAYLAND_DISPLAY", "")
			put := func(s string) {
				t.Helper()
				// Put again until a read returns the new text: the forked owner may be slow to start.
				read := &Tool{Name: "xclip", Read: []string{"xclip", "-selection", "clipboard", "-o"}}
				for attempt := 0; attempt < 5; attempt++ {
					// Always put with xclip: xsel's own forked owner sometimes stops answering under Xvfb.
					c := exec.Command("xclip", "-selection", "clipboard", "-i")
					c.Stdin = strings.NewReader(s)
					if err := c.Run(); err != nil {
						t.Fatalf("put: %v", err)
					}
					deadline := time.Now().Add(time.Second)
					for time.Now().Before(deadline) {
						ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
						got, _ := ReadWith(ctx, read)
						cancel()
						if got == s {
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}
				t.Fatalf("could not put %q on the clipboard", s)
			}
			put("before watch " + name)
			env := System()
			env.LookPath = func(n string) (string, error) {
				if n != name {
					return "", exec.ErrNotFound
				}
				return exec.LookPath(n)
			}
			tool, err := Detect(env, "")
			if err != nil || tool.Name != name {
				t.Fatalf("Detect = %v, %v", tool, err)
			}
			// Same reader, plus a marker once a read finished, so the test changes the
			// clipboard only after watch has seen what was there at start.
			marker := filepath.Join(t.TempDir(), "read")
			tool.Read = []string{"sh", "-c", `"$@"; rc=$?; touch ` + marker + `; exit $rc`, "sh", tool.Read[0]}
			tool.Read = append(tool.Read, detectedArgs(name)...)
			ctx, cancel := context.WithCancel(context.Background())
			c := &collector{}
			done := make(chan error)
			go func() { done <- Watch(ctx, tool, time.Hour, c.change, c.err) }() // no polling: only XFixes events can deliver
			waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil }, c)
			put("one")
			waitFor(t, func() bool { return len(c.snapshot()) == 1 }, c)
			put("two\nlines")
			waitFor(t, func() bool { return len(c.snapshot()) == 2 }, c)
			cancel()
			<-done
			if got := strings.Join(c.snapshot(), "|"); got != "one|two\nlines" {
				t.Errorf("changes = %q", got)
			}
			if errs := c.errs; len(errs) > 0 {
				t.Errorf("watch reported errors (XFixes events should work under Xvfb): %q", errs)
			}
		})
	}
}

// detectedArgs are the reader arguments Detect uses for name.
func detectedArgs(name string) []string {
	if name == "xsel" {
		return []string{"--clipboard", "--output"}
	}
	return []string{"-selection", "clipboard", "-o"}
}
