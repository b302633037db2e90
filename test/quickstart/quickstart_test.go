// Package quickstart runs the README's first command line, as written, the way a new user
// would: in an empty project directory, twice.
package quickstart

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeFirstLine is the first command of the README's first ```sh block.
func readmeFirstLine(t *testing.T, readme string) string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatal("README.md has no ```sh block")
	}
	for _, line := range strings.Split(string(m[1]), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	t.Fatal("README.md's first ```sh block has no command")
	return ""
}

// The line installs relay from the clone (~/relay in the README, a link to this
// repository here), sets up the project and starts `relay watch`; once watch reports it is
// watching, Ctrl-C (SIGINT to the process group, as a terminal sends it) must end it
// cleanly. The clipboard is a stand-in wl-paste (WAYLAND_DISPLAY set) that never changes;
// the X11 and Wayland tests of relay watch exercise real clipboards. Go builds offline
// (GOPROXY=off) from the module cache, into a temporary GOPATH.
func TestREADMEFirstLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs relay (-short)")
	}
	for _, tool := range []string{"bash", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's first line needs %s, which is not installed", tool)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	line := readmeFirstLine(t, filepath.Join(root, "README.md"))
	goenv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		return strings.TrimSpace(string(out))
	}
	modcache, gocache := goenv("GOMODCACHE"), goenv("GOCACHE")

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	fakebin := filepath.Join(tmp, "fakebin")
	project := filepath.Join(tmp, "my-project")
	for _, d := range []string{home, fakebin, project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root, filepath.Join(home, "relay")); err != nil {
		t.Fatal(err)
	}
	// wl-paste --watch CMD runs CMD on each change (there are none); a read prints nothing.
	wl := "#!/bin/sh\nif [ \"$1\" = --watch ]; then exec sleep 3600; fi\n"
	if err := os.WriteFile(filepath.Join(fakebin, "wl-paste"), []byte(wl), 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "GOPATH", "GOBIN", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOTOOLCHAIN", "PATH",
			"RELAY_HOME", "RELAY_THREAD", "DISPLAY", "WAYLAND_DISPLAY", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "GOPATH="+filepath.Join(tmp, "gopath"), "GOMODCACHE="+modcache,
		"GOCACHE="+gocache, "GOPROXY=off", "GOTOOLCHAIN=local", "PATH="+fakebin+":"+os.Getenv("PATH"),
		"WAYLAND_DISPLAY=wayland-test", "NO_COLOR=1")

	for run := 1; run <= 2; run++ {
		stderr := runUntilWatching(t, line, project, env)
		if !strings.Contains(stderr, "Stopped watching.") {
			t.Fatalf("run %d: relay watch did not stop cleanly on Ctrl-C; stderr:\n%s", run, stderr)
		}
		if run == 1 && !strings.Contains(stderr, `Created relaycode.config.json (projectId "my-project"`) {
			t.Errorf("run 1: relay init did not set up the project; stderr:\n%s", stderr)
		}
		if run == 2 && !strings.Contains(stderr, "relay is already initialised here") {
			t.Errorf("run 2: relay init gave no notice; stderr:\n%s", stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "gopath", "bin", "relay")); err != nil {
		t.Errorf("relay was not installed into GOPATH/bin: %v", err)
	}
	if _, err := os.Stat(filepath.Join(project, "relaycode.config.json")); err != nil {
		t.Errorf("no config in the project: %v", err)
	}
}

// runUntilWatching runs line in bash in dir, sends SIGINT once relay watch says it is
// watching, and returns stderr; the line must then exit 0.
func runUntilWatching(t *testing.T, line, dir string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	signal := ownGroup(t, cmd)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	sc := bufio.NewScanner(pipe)
	watching := false
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if !watching && strings.HasPrefix(sc.Text(), "Watching the clipboard with wl-paste") {
			watching = true
			if err := signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if !watching {
		t.Fatalf("the README's first line never started watching (%v)\nline: %s\nstderr:\n%s", err, line, stderr.String())
	}
	if err != nil {
		t.Fatalf("the README's first line exited with %v after Ctrl-C\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "You are now ready to run 'relay watch'") {
		t.Errorf("relay init printed no prompt; stdout:\n%s", stdout.String())
	}
	return stderr.String()
}
