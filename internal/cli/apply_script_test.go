package cli

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands for the apply/watch/log/revert/git scripts.
func init() {
	scriptCmds["treehash"] = cmdTreehash
	scriptCmds["pending"] = cmdPending
	scriptCmds["waitfile"] = cmdWaitfile
	scriptCmds["xvfb"] = cmdXvfb
	scriptCmds["clip"] = cmdClip
	scriptCmds["committed"] = cmdCommitted
}

// treeHash fingerprints every file and directory under dir (path, mode,
// content), leaving out .relaycode/ and .git/.
func treeHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".relaycode" || rel == ".git") {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %v\n", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%x\n", sha256.Sum256(b))
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil)), err
}

// cmdTreehash: `treehash save VAR DIR` stores DIR's hash in $VAR;
// `[!] treehash same VAR DIR` checks that DIR still has that hash.
func cmdTreehash(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || args[0] != "save" && args[0] != "same" {
		ts.Fatalf("usage: treehash save|same VAR DIR")
	}
	got, err := treeHash(ts.MkAbs(args[2]))
	ts.Check(err)
	if args[0] == "save" {
		ts.Setenv(args[1], got)
		return
	}
	want := ts.Getenv(args[1])
	if want == "" {
		ts.Fatalf("treehash: $%s not saved", args[1])
	}
	if (got == want) == neg {
		if neg {
			ts.Fatalf("%s is unchanged, want it changed", args[2])
		}
		ts.Fatalf("%s changed: the tree is not byte-identical to %s", args[2], args[1])
	}
}

// cmdPending: `[!] pending DIR` — DIR/.relaycode holds a pending record.
func cmdPending(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pending DIR")
	}
	m, _ := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), ".relaycode", "*.pending.yml"))
	if (len(m) > 0) == neg {
		ts.Fatalf("pending records in %s: %v", args[0], m)
	}
}

// cmdCommitted: `committed DIR N` — DIR/.relaycode holds exactly N committed records.
func cmdCommitted(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: committed DIR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	if got := countCommitted(ts.MkAbs(args[0])); (got == want) == neg {
		ts.Fatalf("%d committed records in %s, want %d", got, args[0], want)
	}
}

func countCommitted(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, ".relaycode", "*.yml"))
	n := 0
	for _, f := range m {
		if !strings.HasSuffix(f, ".pending.yml") {
			n++
		}
	}
	return n
}

// cmdWaitfile: `waitfile FILE [SECONDS]` waits until FILE exists, or, with
// a "committed:DIR:N" argument, until DIR has N committed records.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile FILE|committed:DIR:N [SECONDS]")
	}
	limit := 30 * time.Second
	if len(args) > 1 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	}
	cond := func() bool { _, err := os.Stat(ts.MkAbs(args[0])); return err == nil }
	if spec, ok := strings.CutPrefix(args[0], "committed:"); ok {
		dir, n, _ := strings.Cut(spec, ":")
		want, err := strconv.Atoi(n)
		ts.Check(err)
		cond = func() bool { return countCommitted(ts.MkAbs(dir)) >= want }
	}
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			ts.Fatalf("timed out after %s waiting for %s", limit, args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdXvfb starts a private X server for the script and sets DISPLAY.
// Scripts guard it with [!exec:Xvfb] skip.
func cmdXvfb(ts *testscript.TestScript, neg bool, args []string) {
	r, w, err := os.Pipe()
	ts.Check(err)
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "640x480x24")
	cmd.ExtraFiles = []*os.File{w}
	ts.Check(cmd.Start())
	w.Close()
	ts.Defer(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		ts.Fatalf("Xvfb did not report its display: %v", err)
	}
	ts.Setenv("DISPLAY", ":"+strings.TrimSpace(line))
	ts.Setenv("WAYLAND_DISPLAY", "")
}

// cmdClip puts FILE's content on the X clipboard with xclip.
func cmdClip(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: clip FILE")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	cmd := exec.Command("xclip", "-selection", "clipboard", "-i")
	cmd.Stdin = f
	cmd.Env = append(os.Environ(), "DISPLAY="+ts.Getenv("DISPLAY"))
	ts.Check(cmd.Run())
}
