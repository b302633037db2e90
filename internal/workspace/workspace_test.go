package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
)

const answer = "```text // hello.txt\nhello\n```\n\n```yaml\nprojectId: demo\nuuid: 7a0c4d2e-1111-4222-8333-444455556666\npromptSummary: greet\ngitCommitMsg: greet\n```\n"

// newWorkspace is a project with one file, as principal p works in it; no memory.
func newWorkspace(t *testing.T, p Principal) (*Workspace, *bytes.Buffer) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("old line\nkeep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default("demo")
	cfg.Dir = dir
	cfg.Core.EnableNotifications = false
	notes := &bytes.Buffer{}
	return &Workspace{Principal: p, Config: cfg, WorkDir: dir, Home: func() (string, error) { return home, nil }, Notes: notes,
		Getenv: func(string) string { return "" }}, notes
}

func TestApplyEditRevertLog(t *testing.T) {
	ctx := context.Background()
	w, _ := newWorkspace(t, Agent)
	out, err := w.Apply(ctx, AnswerRequest{Text: answer, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := Summary(out.Result.State); got != "greet; committed: 1 file(s) changed, +1 -0" {
		t.Errorf("summary %q", got)
	}
	if c := out.Result.Contents["hello.txt"]; c == nil || *c != "hello\n" {
		t.Errorf("engine contents of hello.txt = %v", c)
	}
	// typed edits run through the edit strategy, no JSON on the way
	out, err = w.Edit(ctx, EditRequest{Path: "notes.txt", Edits: []patch.Edit{{OldString: "old line", NewString: "new line"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Config.Dir, "notes.txt")); string(b) != "new line\nkeep\n" {
		t.Errorf("notes.txt = %q", b)
	}
	entries, total, err := w.Log(1)
	if err != nil || total != 2 || len(entries) != 1 || entries[0].UUID != out.Result.State.UUID {
		t.Fatalf("Log(1) = %+v, %d, %v", entries, total, err)
	}
	rev, err := w.Revert(ctx, RevertRequest{})
	if err != nil || rev.Reverted.UUID != out.Result.State.UUID {
		t.Fatalf("Revert = %+v, %v", rev, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Config.Dir, "notes.txt")); string(b) != "old line\nkeep\n" {
		t.Errorf("after revert notes.txt = %q", b)
	}
	_, err = w.Revert(ctx, RevertRequest{Ref: out.Result.State.UUID})
	var already *AlreadyRevertedError
	if !errors.As(err, &already) {
		t.Fatalf("second revert: %v", err)
	}
	if _, hint := Explain(err, Agent); !strings.Contains(hint, `"op":"revert"`) {
		t.Errorf("agent hint %q", hint)
	}
	if _, hint := Explain(err, Person); !strings.HasPrefix(hint, "relay revert ") {
		t.Errorf("person hint %q", hint)
	}
}

// An agent never approves its own transaction, whatever approval function it is given.
func TestAgentCannotApprove(t *testing.T) {
	for _, p := range []Principal{Person, Agent} {
		w, _ := newWorkspace(t, p)
		w.Config.Patch.ApprovalMode = "manual"
		asked := false
		w.Approve = func(context.Context, string) (bool, error) { asked = true; return true, nil }
		_, err := w.Apply(context.Background(), AnswerRequest{Text: answer})
		if p == Person && (err != nil || !asked) {
			t.Errorf("person: %v, asked %v", err, asked)
		}
		var need *txn.NeedsApprovalError
		if p == Agent && (!errors.As(err, &need) || asked) {
			t.Errorf("agent: %v, asked %v", err, asked)
		}
	}
}

// A parse error names the source and gives each principal its next step.
func TestAnswerErrors(t *testing.T) {
	w, _ := newWorkspace(t, Person)
	_, err := w.Apply(context.Background(), AnswerRequest{Text: "no answer here", Source: "a.md"})
	msg, hint := Explain(err, Person)
	if !strings.HasPrefix(msg, "a.md holds no changes relay can read") || !strings.HasPrefix(hint, "relay prompt") {
		t.Errorf("person: %q / %q", msg, hint)
	}
	msg, hint = Explain(err, Agent)
	if !strings.HasPrefix(msg, "a.md holds no changes") || !strings.HasPrefix(hint, "send a relay answer") {
		t.Errorf("agent: %q / %q", msg, hint)
	}
}

// An answer in another tool's format applies without a control block, and the
// outcome says which format was read; a mixed answer names what it found and,
// for each principal, how to pick one.
func TestApplyAnyFormat(t *testing.T) {
	w, _ := newWorkspace(t, Person)
	dir := w.Config.Dir
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := w.Apply(context.Background(), AnswerRequest{Text: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer == nil || out.Answer.Format != patch.FormatDiff {
		t.Fatalf("outcome answer %+v, want the diff format", out.Answer)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two\n" {
		t.Fatalf("a.txt = %q", b)
	}
	mixed := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three\n\nb.txt\n```\nfile b\n```\n"
	_, err = w.Apply(context.Background(), AnswerRequest{Text: mixed, Source: "m.md"})
	msg, hint := Explain(err, Person)
	if !strings.Contains(msg, "more than one format") || hint != "read only the one meant: relay apply m.md --format diff   (--dry-run shows the plan first)" {
		t.Errorf("person: %q / %q", msg, hint)
	}
	if _, hint = Explain(err, Agent); !strings.Contains(hint, `"format": "diff"`) {
		t.Errorf("agent hint %q", hint)
	}
	// relay watch: a bare answer for a file this project does not have is not applied.
	_, err = w.Apply(context.Background(), AnswerRequest{Text: "--- a/zz.txt\n+++ b/zz.txt\n@@ -1 +1 @@\n-a\n+b\n", Op: "watch", Yes: true})
	if msg, _ := Explain(err, Person); !strings.Contains(msg, "zz.txt does not exist in this project") {
		t.Errorf("watch on a foreign file: %v", err)
	}
}

// The diff recorded for a transaction comes from the engine's contents, not the disk.
func TestTxnDiff(t *testing.T) {
	old := "a\n"
	st := &txn.State{Snapshot: map[string]*string{"x.txt": &old, "new.txt": nil},
		Files: []txn.FileChange{{Path: "x.txt", Action: "edit"}, {Path: "new.txt", Action: "new"}}}
	now, added := "b\n", "n\n"
	d := txnDiff(st, map[string]*string{"x.txt": &now, "new.txt": &added})
	for _, want := range []string{"--- a/x.txt", "+++ b/x.txt", "-a", "+b", "--- /dev/null", "+++ b/new.txt", "+n"} {
		if !strings.Contains(d, want+"\n") {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}
