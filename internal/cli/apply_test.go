package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

const approvalResponse = "```text // a.txt\nchanged\n```\n\n```yaml\nprojectId: demo\nuuid: 9a8b7c6d-0000-4000-8000-000000000001\n```\n"

// TestApplyAsksOnTerminal answers the approval prompt of manual mode on a (fake) terminal.
func TestApplyAsksOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		kept   bool
	}{{"y\n", true}, {"yes\n", true}, {"n\n", false}, {"\n", false}, {"", false}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("original\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			resp := filepath.Join(dir, "resp.md")
			if err := os.WriteFile(resp, []byte(approvalResponse), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := config.Default("demo")
			cfg.Dir = dir
			cfg.Patch.ApprovalMode = "manual"
			cfg.Core.EnableNotifications = false
			ios, in, out, errOut := iostreams.Test()
			ios.SetTTY(true, true, true)
			in.WriteString(tc.answer)
			err := applyRun(context.Background(), &ApplyOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil }, File: resp})
			if !strings.Contains(errOut.String(), "Do you want to approve and commit them? (y/N)") {
				t.Errorf("no prompt in stderr:\n%s", errOut)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
			if tc.kept {
				if err != nil || string(got) != "changed\n" || !strings.Contains(out.String(), "Committed transaction") {
					t.Errorf("approved: err=%v a.txt=%q out=%q", err, got, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "rejected") || string(got) != "original\n" {
				t.Errorf("rejected: err=%v a.txt=%q", err, got)
			}
		})
	}
}

func TestApplyFromStdinAndNotAPatch(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default("demo")
	cfg.Dir = dir
	ios, in, _, _ := iostreams.Test()
	in.WriteString("just prose, no YAML block")
	err := applyRun(context.Background(), &ApplyOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil }, File: "-", Yes: true})
	if err == nil || !strings.Contains(err.Error(), "stdin holds no changes relay can read: no control block") {
		t.Fatalf("err = %v", err)
	}
	ios, in, _, _ = iostreams.Test()
	in.WriteString(approvalResponse)
	if err := applyRun(context.Background(), &ApplyOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil }, File: "-", Yes: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "changed\n" {
		t.Errorf("a.txt = %q", b)
	}
}

func TestRecoverWorkDirFromSubdirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "src", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "relaycode.config.json"), []byte(`{"projectId": "demo"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".relaycode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil { // the search for the config stops at the work tree's root
		t.Fatal(err)
	}
	// An orphaned pending record: a.txt was created by a transaction that crashed.
	pending := "uuid: 9a8b7c6d-0000-4000-8000-00000000000f\nprojectId: demo\nsnapshot:\n  a.txt: null\napproved: false\n"
	home := t.TempDir()
	key, err := txn.LoadRecordKey(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".relaycode", "9a8b7c6d-0000-4000-8000-00000000000f.pending.yml"), txn.SealRecord(key, []byte(pending)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("half-applied"), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, _, errOut := iostreams.Test()
	f := &Factory{IO: ios, WorkDir: func() (string, error) { return sub, nil }, Home: func() (string, error) { return home, nil }}
	if err := recoverWorkDir(f); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt not removed by recovery: %v", err)
	}
	if !strings.Contains(errOut.String(), "Recovered interrupted transaction 9a8b7c6d-0000-4000-8000-00000000000f") {
		t.Errorf("stderr = %q", errOut)
	}
	// Outside any project it does nothing.
	f.WorkDir = func() (string, error) { return t.TempDir(), nil }
	if err := recoverWorkDir(f); err != nil {
		t.Errorf("outside a project: %v", err)
	}
}
