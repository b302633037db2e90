package txn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/apply/patch"
)

const testUUID = "11111111-2222-4333-8444-555555555555"

// fakePatch understands replace and a tiny "OLD=>NEW" search-replace, so
// these tests do not depend on the real engine.
func fakePatch(original string, exists bool, s patch.Strategy, body string, _ patch.Options) (patch.Result, error) {
	if s == patch.Replace {
		return patch.Result{Content: body, Strategy: s}, nil
	}
	if !exists {
		return patch.Result{}, errors.New("file does not exist")
	}
	old, repl, ok := strings.Cut(body, "=>")
	if !ok || !strings.Contains(original, old) {
		return patch.Result{}, fmt.Errorf("search text %q not found", old)
	}
	return patch.Result{Content: strings.Replace(original, old, repl, 1), Strategy: s}, nil
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeHash fingerprints every file and directory (content and mode) outside .relaycode.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == StateDir {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", rel, fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%x\n", sha256.Sum256(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// testKey seals the records test engines write, as $RELAY_HOME/record.key does.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func engine(dir string) *Engine {
	return &Engine{Dir: dir, Opts: Options{ProjectID: "p", ApprovalMode: "auto"}, Patch: fakePatch, RecordKey: testKey}
}

func response(ops ...patch.Operation) *patch.Response {
	return &patch.Response{
		Control:    patch.Control{ProjectID: "p", UUID: testUUID, GitCommitMsg: "feat: x\n\nbody line", PromptSummary: "do x"},
		Operations: ops,
		Reasoning:  []string{"because"},
	}
}

func write(p, content string) patch.Operation {
	return patch.Operation{Kind: patch.OpWrite, Path: p, Content: content, Strategy: patch.Replace}
}

func sr(p, body string) patch.Operation {
	return patch.Operation{Kind: patch.OpWrite, Path: p, Content: body, Strategy: patch.MultiSearchReplace}
}

func pendingFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, StateDir, "*"+pendingSuffix))
	return m
}

func TestRunCommitsAndLogs(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\ntwo\n", "old.txt": "bye\n", "mv/src.txt": "move me\n"})
	if err := os.Chmod(filepath.Join(dir, "mv/src.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	resp := response(
		sr("a.txt", "two=>TWO"),
		sr("a.txt", "one=>ONE"),
		write("new dir/deep/b.txt", "hello\n"),
		patch.Operation{Kind: patch.OpDelete, Path: "old.txt"},
		patch.Operation{Kind: patch.OpRename, From: "mv/src.txt", To: "moved/dst.txt"},
	)
	res, err := engine(dir).Run(context.Background(), Request{Response: resp})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	if string(got) != "ONE\nTWO\n" {
		t.Errorf("a.txt = %q, want chained edits", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "old.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old.txt still exists: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "moved/dst.txt"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("renamed file: %v, mode %v, want 0755 kept", err, fi)
	}
	if len(pendingFiles(t, dir)) != 0 {
		t.Errorf("pending file left behind")
	}
	list, _, err := List(dir, testKey)
	if err != nil || len(list) != 1 || list[0].UUID != testUUID || !list[0].Approved {
		t.Fatalf("List = %v, %v", list, err)
	}
	if list[0].GitCommitMsg != "feat: x\n\nbody line" {
		t.Errorf("commit message not kept intact: %q", list[0].GitCommitMsg)
	}
	want := []FileChange{
		{Path: "a.txt", Action: "edit", Added: 2, Removed: 2},
		{Path: "new dir/deep/b.txt", Action: "new", Added: 1},
		{Path: "old.txt", Action: "delete", Removed: 1},
		{Path: "moved/dst.txt", Action: "rename", From: "mv/src.txt"},
	}
	if !slices.Equal(res.State.Files, want) {
		t.Errorf("Files = %+v\nwant %+v", res.State.Files, want)
	}
	// The same uuid is not applied twice.
	_, err = engine(dir).Run(context.Background(), Request{Response: resp})
	var skip *SkipError
	if !errors.As(err, &skip) || !strings.Contains(err.Error(), "already been processed") {
		t.Errorf("second run: %v, want already processed", err)
	}
}

func TestFailuresLeaveTreeIdentical(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ops  []patch.Operation
		step string
	}{
		{"bad hunk after writes", Options{}, []patch.Operation{write("n/new.txt", "x"), sr("a.txt", "one=>1"), sr("a.txt", "nope=>x")}, "patch"},
		{"pre-command fails", Options{PreCommand: "echo broken >&2; exit 3"}, []patch.Operation{write("a.txt", "changed")}, "pre-command"},
		{"post-command fails", Options{PostCommand: "exit 1"}, []patch.Operation{write("a.txt", "changed"), write("x/y/z.txt", "new"), patch.Operation{Kind: patch.OpDelete, Path: "keep/k.txt"}}, "post-command"},
		{"linter over threshold, nobody to ask", Options{Linter: "test -f x/y/z.txt && echo 'Found 2 errors.' && exit 1; exit 0"}, []patch.Operation{write("x/y/z.txt", "new")}, "approval"},
		{"manual mode, nobody to ask", Options{ApprovalMode: "manual"}, []patch.Operation{write("a.txt", "changed")}, "approval"},
		{"parent is a file", Options{}, []patch.Operation{write("a.txt", "changed"), write("keep/k.txt/child.txt", "x")}, "write"},
		{"path escapes", Options{}, []patch.Operation{write("a.txt", "changed"), write("../escape.txt", "x")}, "path check"},
		{"absolute path", Options{}, []patch.Operation{write("/tmp/abs.txt", "x")}, "path check"},
		{"into .git", Options{}, []patch.Operation{write(".git/config", "x")}, "path check"},
		{"into .relaycode", Options{}, []patch.Operation{write(".relaycode/x.yml", "x")}, "path check"},
		{"symlink outside", Options{}, []patch.Operation{write("out/evil.txt", "x")}, "path check"},
		{"delete missing", Options{}, []patch.Operation{write("a.txt", "c"), patch.Operation{Kind: patch.OpDelete, Path: "missing.txt"}}, "patch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"a.txt": "one\ntwo\n", "keep/k.txt": "k"})
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
				t.Fatal(err)
			}
			before := treeHash(t, dir)
			e := engine(dir)
			tc.opts.ProjectID = "p"
			if tc.opts.ApprovalMode == "" {
				tc.opts.ApprovalMode = "auto"
			}
			e.Opts = tc.opts
			_, err := e.Run(context.Background(), Request{Response: response(tc.ops...)})
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("Run error = %v, want *Failure", err)
			}
			if f.Step != tc.step {
				t.Errorf("step = %q, want %q (%v)", f.Step, tc.step, err)
			}
			if f.RollbackErr != nil {
				t.Errorf("rollback error: %v", f.RollbackErr)
			}
			if after := treeHash(t, dir); after != before {
				t.Errorf("tree changed after failure %v", err)
			}
			if p := pendingFiles(t, dir); len(p) != 0 {
				t.Errorf("pending files left: %v", p)
			}
			if Committed(dir, testUUID, testKey) {
				t.Errorf("failed transaction was committed")
			}
		})
	}
}

func TestUnwritableFileRollsBack(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a", "ro/b.txt": "b"})
	ro := filepath.Join(dir, "ro/b.txt")
	if os.Geteuid() == 0 {
		// Permissions do not stop root; the immutable attribute does (ext4, xfs, btrfs).
		if out, err := exec.Command("chattr", "+i", ro).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i is not available here: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", ro).Run() })
	} else if err := os.Chmod(ro, 0o444); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, dir)
	_, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A"), write("ro/b.txt", "B"))})
	var f *Failure
	if !errors.As(err, &f) || f.Step != "write" {
		t.Fatalf("err = %v, want write failure", err)
	}
	if treeHash(t, dir) != before {
		t.Errorf("tree changed")
	}
}

func TestAskApproves(t *testing.T) {
	for _, answer := range []bool{true, false} {
		t.Run(fmt.Sprint(answer), func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"a.txt": "a"})
			before := treeHash(t, dir)
			e := engine(dir)
			e.Opts.ApprovalMode = "manual"
			var asked string
			e.Ask = func(_ context.Context, reason string) (bool, error) {
				asked = reason
				// The changes are on disk while the user decides.
				b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
				if string(b) != "A" || len(pendingFiles(t, dir)) != 1 {
					t.Errorf("during approval: a.txt=%q pending=%d", b, len(pendingFiles(t, dir)))
				}
				return answer, nil
			}
			_, err := e.Run(context.Background(), Request{Response: response(write("a.txt", "A"))})
			if !strings.Contains(asked, "manual") {
				t.Errorf("reason = %q", asked)
			}
			if answer && err != nil {
				t.Fatalf("approved run: %v", err)
			}
			if !answer {
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("rejected run: %v", err)
				}
				if treeHash(t, dir) != before {
					t.Errorf("tree changed after rejection")
				}
			}
		})
	}
}

func TestBaselineLinterErrorsAreNotCountedAgainstThePatch(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	e := engine(dir)
	e.Opts.Linter = "echo 'Found 3 errors.'; exit 2" // pre-existing errors, unchanged by the patch
	res, err := e.Run(context.Background(), Request{Response: response(write("a.txt", "A"))})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Baseline != 3 || res.Final != 3 {
		t.Errorf("baseline %d final %d, want 3 3", res.Baseline, res.Final)
	}
}

func TestInterruptRollsBack(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	before := treeHash(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	e := engine(dir)
	e.Opts.PostCommand = "sleep 0.05"
	e.Logf = func(format string, args ...any) {
		if strings.Contains(format, "post-command") {
			cancel()
		}
	}
	_, err := e.Run(ctx, Request{Response: response(write("a.txt", "A"), write("d/new.txt", "n"))})
	var f *Failure
	if !errors.As(err, &f) || f.Step != "interrupted" {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if treeHash(t, dir) != before {
		t.Errorf("tree changed")
	}
}

func TestRecoverRestoresOrphan(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\r\nbinary\x00\xff\n", "gone.txt": "g"})
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeHash(t, dir)
	e := engine(dir)
	e.Opts.ApprovalMode = "manual"
	// Simulate a crash during approval: keep the pending record as it was on disk, let the run
	// roll back, then put the project and the record back into the crashed state.
	var saved []byte
	e.Ask = func(context.Context, string) (bool, error) {
		saved, _ = os.ReadFile(pendingFiles(t, dir)[0])
		return false, nil
	}
	ops := []patch.Operation{write("a.txt", "A"), write("n1/n2/new.txt", "n"), {Kind: patch.OpDelete, Path: "gone.txt"}}
	if _, err := e.Run(context.Background(), Request{Response: response(ops...)}); !errors.Is(err, ErrRejected) {
		t.Fatal(err)
	}
	if err := os.WriteFile(pendingPath(dir, testUUID), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"a.txt": "A", "n1/n2/new.txt": "n"})
	os.Remove(filepath.Join(dir, "gone.txt"))
	if treeHash(t, dir) == before {
		t.Fatal("crash image equals the original; the test would prove nothing")
	}
	rec, err := Recover(dir, testKey)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(rec) != 1 || rec[0].UUID != testUUID {
		t.Fatalf("Recover = %+v", rec)
	}
	if treeHash(t, dir) != before {
		t.Errorf("tree not restored byte for byte")
	}
	if len(pendingFiles(t, dir)) != 0 {
		t.Errorf("pending file kept")
	}
	// The files as the crash left them are kept, so edits made since are not lost.
	wantSaved := filepath.Join(dir, StateDir, "undone", testUUID)
	if rec[0].SavedTo != wantSaved {
		t.Errorf("SavedTo = %q, want %q", rec[0].SavedTo, wantSaved)
	}
	for name, want := range map[string]string{"a.txt": "A", "n1/n2/new.txt": "n"} {
		if got, err := os.ReadFile(filepath.Join(wantSaved, name)); err != nil || string(got) != want {
			t.Errorf("saved %s = %q, %v; want %q", name, got, err, want)
		}
	}
	// A rolled-back uuid may be applied again.
	if _, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A"))}); err != nil {
		t.Errorf("re-apply after recovery: %v", err)
	}
}

func TestRecoverSkipsLiveTransaction(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	lk, err := tryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.unlock()
	if err := os.WriteFile(pendingPath(dir, testUUID), []byte("uuid: "+testUUID+"\nsnapshot:\n  a.txt: old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(dir, testKey)
	if err != nil || len(rec) != 0 {
		t.Fatalf("Recover while locked = %v, %v; want nothing", rec, err)
	}
	_, err = engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A"))})
	var busy *BusyError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() {
		t.Fatalf("Run while locked = %v, want BusyError with our pid", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "a" {
		t.Errorf("a.txt touched while another process held the lock")
	}
}

func TestRevertAndRevertOfRevert(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\n", "del.txt": "d\n"})
	if err := os.Chmod(filepath.Join(dir, "del.txt"), 0o700); err != nil {
		t.Fatal(err)
	}
	h0 := treeHash(t, dir)
	ops := []patch.Operation{write("a.txt", "A\n"), write("new/n.txt", "n\n"), {Kind: patch.OpDelete, Path: "del.txt"}}
	if _, err := engine(dir).Run(context.Background(), Request{Response: response(ops...)}); err != nil {
		t.Fatal(err)
	}
	h1 := treeHash(t, dir)
	st, err := Find(dir, "1", testKey)
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := Changed(dir, st); err != nil || len(ch) != 0 {
		t.Fatalf("Changed = %v, %v", ch, err)
	}
	req, err := RevertRequest(st)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine(dir).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("revert: %v", err)
	}
	if res.State.RevertOf != testUUID || res.State.Reasoning[0] != "Reverting transaction "+testUUID+"." {
		t.Errorf("revert record: %+v", res.State)
	}
	if treeHash(t, dir) != h0 {
		t.Errorf("revert did not restore the original tree (content and modes)")
	}
	// The original is now reverted: index 1 finds nothing left to revert.
	if _, err := Find(dir, "1", testKey); err == nil {
		t.Errorf("Find(1) after revert should find nothing")
	}
	rr, err := RevertRequest(res.State)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine(dir).Run(context.Background(), rr); err != nil {
		t.Fatalf("revert of revert: %v", err)
	}
	if treeHash(t, dir) != h1 {
		t.Errorf("revert of revert did not bring the change back")
	}
	if st, err := Find(dir, "1", testKey); err != nil || st.UUID != testUUID {
		t.Errorf("after revert-of-revert, index 1 = %v, %v; want the original again", st, err)
	}
	// Edits after the transaction are detected.
	writeTree(t, dir, map[string]string{"a.txt": "edited later\n"})
	if ch, _ := Changed(dir, st); !slices.Equal(ch, []string{"a.txt"}) {
		t.Errorf("Changed = %v, want [a.txt]", ch)
	}
}

func TestCleanPath(t *testing.T) {
	ok := map[string]string{"a/b.txt": "a/b.txt", "./a//b": "a/b", "src/My File.tsx": "src/My File.tsx", ".gitignore": ".gitignore", "x/.relaycode/y": "x/.relaycode/y"}
	for in, want := range ok {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", " ", "/etc/passwd", `\\server\x`, "C:/x", "../x", "a/../../x", "a/../b", ".git/hooks/pre-commit", "sub/.git/config", ".GIT/x", ".relaycode/a.yml", ".", "a\x00b"} {
		if _, err := CleanPath(bad); err == nil {
			t.Errorf("CleanPath(%q) accepted", bad)
		}
	}
}

func TestLineStat(t *testing.T) {
	tests := []struct {
		a, b     string
		add, rem int
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\nc\n", "a\nX\nc\n", 1, 1},
		{"a\nb\nc\nd\n", "b\nc\nd\ne\n", 1, 1},
		{"a\nb", "a\nb\n", 1, 1},
	}
	for _, tc := range tests {
		if a, r := lineStat(tc.a, tc.b); a != tc.add || r != tc.rem {
			t.Errorf("lineStat(%q, %q) = +%d -%d, want +%d -%d", tc.a, tc.b, a, r, tc.add, tc.rem)
		}
	}
}

func TestBranchSlug(t *testing.T) {
	tests := map[string]string{
		"feat: Add the Button!":    "feat-add-the-button",
		"fix(api)__under  score":   "fixapi-under-score",
		"":                         "fallback",
		"!!!":                      "fallback",
		strings.Repeat("abc ", 30): strings.TrimRight(strings.Repeat("abc-", 18)[:70], "-"),
		"first line\nsecond line":  "first-line",
	}
	for in, want := range tests {
		if got := BranchSlug(in, "fallback"); got != want {
			t.Errorf("BranchSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/abs", ".git/x", "a/./b/../c", `a\..\b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, err := CleanPath(p)
		if err != nil {
			return
		}
		if filepath.IsAbs(clean) || strings.HasPrefix(clean, "/") || slices.Contains(strings.Split(clean, "/"), "..") {
			t.Fatalf("CleanPath(%q) = %q escapes", p, clean)
		}
		if first, _, _ := strings.Cut(clean, "/"); strings.EqualFold(first, ".git") || strings.EqualFold(first, StateDir) {
			t.Fatalf("CleanPath(%q) = %q is inside a protected dir", p, clean)
		}
	})
}

func FuzzStateRoundTrip(f *testing.F) {
	f.Add("plain\n")
	f.Add("trailing spaces   \n\n\n")
	f.Add("crlf\r\nline\r\n")
	f.Add("\x00\xff binary")
	f.Add("  leading\n\tindent")
	f.Add("\tall: build\n\tgo build\n") // a first line starting with a tab: yaml.v3 alone cannot read it back
	f.Fuzz(func(t *testing.T, content string) {
		st := &State{UUID: testUUID, Snapshot: map[string]*string{"f": &content},
			Operations: []patch.Operation{{Kind: patch.OpWrite, Path: "f", Content: content}},
			Reasoning:  []string{content}, GitCommitMsg: content, PromptSummary: content}
		b, err := st.marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := unmarshalState(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Snapshot["f"] == nil || *got.Snapshot["f"] != content {
			t.Fatalf("snapshot round trip changed %q", content)
		}
		if len(got.Operations) != 1 || got.Operations[0].Content != content || len(got.Reasoning) != 1 || got.Reasoning[0] != content ||
			got.GitCommitMsg != content || got.PromptSummary != content {
			t.Fatalf("round trip of %q changed the record's texts: %+v", content, got)
		}
	})
}

func TestConcurrentRunsNeverOverlap(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	inPost := make(chan struct{})
	release := make(chan struct{})
	slow := engine(dir)
	slow.Opts.PostCommand = "wait"
	slow.Shell = func(ctx context.Context, dir, script string) (CommandResult, error) {
		close(inPost)
		<-release
		return CommandResult{}, nil
	}
	done := make(chan error)
	go func() {
		_, err := slow.Run(context.Background(), Request{Response: response(write("a.txt", "first"))})
		done <- err
	}()
	<-inPost
	other := response(write("b.txt", "second"))
	other.Control.UUID = "11111111-2222-4333-8444-666666666666"
	_, err := engine(dir).Run(context.Background(), Request{Response: other})
	var busy *BusyError
	if !errors.As(err, &busy) {
		t.Errorf("second run during the first = %v, want BusyError", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
		t.Errorf("second run wrote b.txt")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := engine(dir).Run(context.Background(), Request{Response: other}); err != nil {
		t.Errorf("second run after the first finished: %v", err)
	}
}

func TestCommittedRecordEqualsFullEncoding(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\n", "b.txt": "binary\x00\xff"})
	res, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A\n"), patch.Operation{Kind: patch.OpDelete, Path: "b.txt"})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readState(committedPath(dir, testUUID))
	if err != nil {
		t.Fatal(err)
	}
	full, err := res.State.marshal()
	if err != nil {
		t.Fatal(err)
	}
	want, err := unmarshalState(full)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("committed record differs from a full encoding:\n got %+v\nwant %+v", got, want)
	}
	if !got.Approved || got.After["a.txt"] == "" || len(got.Files) != 2 || *got.Snapshot["b.txt"] != "binary\x00\xff" {
		t.Errorf("committed record incomplete: %+v", got)
	}
}

func TestRecoverAfterCrashBetweenCommitAndCleanup(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	if _, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A"))}); err != nil {
		t.Fatal(err)
	}
	// The committed record exists; put back a pending record as if relay died before removing it.
	b, err := os.ReadFile(committedPath(dir, testUUID))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pendingPath(dir, testUUID), seal(testKey, b), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(dir, testKey)
	if err != nil || len(rec) != 1 || !rec[0].Committed {
		t.Fatalf("Recover = %+v, %v; want the committed transaction kept", rec, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "A" {
		t.Errorf("a committed transaction was rolled back: a.txt = %q", got)
	}
	if len(pendingFiles(t, dir)) != 0 {
		t.Errorf("pending record kept")
	}
}

func TestRecoverIsIdempotentAfterPartialRollback(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a", "b.txt": "b"})
	before := treeHash(t, dir)
	e := engine(dir)
	var saved []byte
	e.Opts.ApprovalMode = "manual"
	e.Ask = func(context.Context, string) (bool, error) {
		saved, _ = os.ReadFile(pendingFiles(t, dir)[0])
		return false, nil
	}
	if _, err := e.Run(context.Background(), Request{Response: response(write("a.txt", "A"), write("b.txt", "B"), write("c/new.txt", "n"))}); !errors.Is(err, ErrRejected) {
		t.Fatal(err)
	}
	// A crash in the middle of a rollback: a.txt already restored, b.txt and c/new.txt not yet.
	if err := os.WriteFile(pendingPath(dir, testUUID), saved, 0o600); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"b.txt": "B", "c/new.txt": "n"})
	if _, err := Recover(dir, testKey); err != nil {
		t.Fatal(err)
	}
	if treeHash(t, dir) != before {
		t.Errorf("tree not restored after an interrupted rollback")
	}
}

func TestDeleteMissingSaysWhichFile(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	_, err := engine(dir).Run(context.Background(), Request{Response: response(patch.Operation{Kind: patch.OpDelete, Path: "gone.txt"})})
	if err == nil || !strings.Contains(err.Error(), "operation 1 deletes gone.txt, which does not exist") || strings.Contains(err.Error(), "block to :") {
		t.Fatalf("error = %v, want it to name gone.txt without an empty block path", err)
	}
}

func TestNeedsApprovalMessageIsOneLowercaseSentence(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	e := engine(dir)
	e.Opts.ApprovalMode = "manual"
	_, err := e.Run(context.Background(), Request{Response: response(write("a.txt", "two\n"))})
	want := `manual approval required because "approvalMode" is "manual", and there is no terminal to ask on; so the transaction was rolled back`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want prefix %q", err, want)
	}
}

func TestFindIgnoresUUIDCase(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	const id = "0b2c1a52-0a7e-4d7e-9b1a-0c9d8e7f6a05"
	resp := response(write("a.txt", "two\n"))
	resp.Control.UUID = id
	if _, err := engine(dir).Run(context.Background(), Request{Response: resp}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{strings.ToUpper(id), strings.ToUpper(id[:13])} {
		if st, err := Find(dir, ref, testKey); err != nil || st.UUID != id {
			t.Errorf("Find(%q) = %v, %v; want %s", ref, st, err, id)
		}
	}
}

func TestFindEightDigitUUIDPrefix(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "one\n"})
	if _, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "two\n"))}); err != nil {
		t.Fatal(err)
	}
	if st, err := Find(dir, testUUID[:8], testKey); err != nil || st.UUID != testUUID {
		t.Errorf("Find(%q) = %v, %v; want %s", testUUID[:8], st, err, testUUID)
	}
	var nf *NotFoundError
	if _, err := Find(dir, "2", testKey); !errors.As(err, &nf) || !nf.Index {
		t.Errorf("Find(2) = %v, want an index NotFoundError", err)
	}
}

// A codex `*** Move to:` onto an existing file replaces it, as codex does; the
// replaced file is in the snapshot, so revert brings both files back. A plain
// rename onto an existing file is still refused.
func TestMoveOntoExistingFileReplacesItAndReverts(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\n", "b.txt": "old b\n"})
	h0 := treeHash(t, dir)
	plain := patch.Operation{Kind: patch.OpRename, From: "a.txt", To: "b.txt"}
	if _, err := engine(dir).Run(context.Background(), Request{Response: response(plain)}); err == nil || !strings.Contains(err.Error(), "which exists") {
		t.Fatalf("plain rename onto an existing file: %v, want a refusal", err)
	}
	move := plain
	move.Overwrite = true
	res, err := engine(dir).Run(context.Background(), Request{Response: response(write("a.txt", "A\n"), move)})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAB(t, dir); got["b.txt"] != "A\n" || got["a.txt"] != "" {
		t.Fatalf("after the move: %q", got)
	}
	if old := res.State.Snapshot["b.txt"]; old == nil || *old != "old b\n" {
		t.Fatalf("snapshot of the replaced file = %v", old)
	}
	req, err := RevertRequest(res.State)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine(dir).Run(context.Background(), req); err != nil {
		t.Fatalf("revert: %v", err)
	}
	if treeHash(t, dir) != h0 {
		t.Errorf("revert did not bring back both files")
	}
}

// readAB maps a.txt and b.txt under dir to their content, when they exist.
func readAB(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range []string{"a.txt", "b.txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			out[n] = string(b)
		}
	}
	return out
}

// relay watch applies a bare answer only when it plainly edits this project.
func TestCheckTargets(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\n"})
	ok := []patch.Operation{{Kind: patch.OpWrite, Path: "a.txt"}, {Kind: patch.OpWrite, Path: "new.txt", Create: true}, {Kind: patch.OpWrite, Path: "new.txt"}, {Kind: patch.OpRename, From: "a.txt", To: "b.txt"}, {Kind: patch.OpDelete, Path: "b.txt"}}
	if err := CheckTargets(dir, &patch.Response{Operations: ok}); err != nil {
		t.Fatalf("edits to this project: %v", err)
	}
	var np *NotThisProjectError
	if err := CheckTargets(dir, &patch.Response{Operations: []patch.Operation{{Kind: patch.OpWrite, Path: "src/other.go"}}}); !errors.As(err, &np) || np.Path != "src/other.go" {
		t.Fatalf("a file of another project: %v", err)
	}
	if err := CheckTargets(dir, &patch.Response{Operations: []patch.Operation{{Kind: patch.OpWrite, Path: "../x", Create: true}}}); err == nil {
		t.Fatal("a path outside the project passed")
	}
}

// TestRecordKeepsEveryText: every text a record holds (each string field, element, map key
// and value, in State and the types inside it) reads back as written when it starts with
// white space, which yaml.v3 alone cannot write readably; a text field added later is held
// to it too, as it is filled here by reflection.
func TestRecordKeepsEveryText(t *testing.T) {
	for _, text := range []string{"\tall: build\n\tgo build\n", "  indented\n\tthen a tab", "\n0", " \xff"} {
		var st State
		fillTexts(reflect.ValueOf(&st).Elem(), text)
		st.UUID = testUUID
		b, err := st.marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := unmarshalState(b)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		got.CreatedAt = st.CreatedAt // a zero time reads back in UTC
		if !reflect.DeepEqual(*got, st) {
			t.Errorf("%q: the record read back differs:\n got %+v\nwant %+v", text, *got, st)
		}
	}
}

// fillTexts sets every string reachable in v to text, giving each slice one element and
// each map one entry.
func fillTexts(v reflect.Value, text string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillTexts(v.Elem(), text)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillTexts(v.Index(0), text)
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillTexts(k, text)
		fillTexts(e, text)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillTexts(f, text)
			}
		}
	}
}
