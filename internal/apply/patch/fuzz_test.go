package patch

import (
	"errors"
	"github.com/relaydev/relay/internal/testsupport/corpus"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addCorpusSeeds feeds the fuzzer the reference cases of one strategy.
func addCorpusSeeds(f *testing.F, glob string) {
	root := corpus.Find("corpus/patch")
	if root == "" {
		return
	}
	ms, _ := filepath.Glob(filepath.Join(root, glob))
	for _, m := range ms {
		in, err1 := os.ReadFile(filepath.Join(m, "input"))
		p, err2 := os.ReadFile(filepath.Join(m, "patch"))
		if err1 == nil && err2 == nil {
			f.Add(string(in), string(p))
		}
	}
}

// addHistorySeeds feeds the fuzzer real LLM patches of the named strategies
// from the history corpus (input and patch.<n>.<strategy>).
func addHistorySeeds(f *testing.F, strategies ...string) {
	root := corpus.Find("corpus/patch")
	if root == "" {
		return
	}
	for _, st := range strategies {
		ps, _ := filepath.Glob(filepath.Join(root, "history-*", "*", "*", "patch.0."+st))
		for _, p := range ps {
			in, err1 := os.ReadFile(filepath.Join(filepath.Dir(p), "input"))
			body, err2 := os.ReadFile(p)
			if err1 == nil && err2 == nil {
				f.Add(string(in), string(body))
			}
		}
	}
}

// checkApply is what every strategy must guarantee for any input.
func checkApply(t *testing.T, orig, body string, st Strategy) {
	if len(orig) > 1<<16 || len(body) > 1<<16 {
		t.Skip()
	}
	res, err := Apply(orig, true, st, body, Options{})
	if err != nil {
		var ae *ApplyError
		if !errors.As(err, &ae) {
			t.Fatalf("error is %T, want *ApplyError: %v", err, err)
		}
		if ae.Error() == "" {
			t.Fatal("empty error message")
		}
		return
	}
	if len(res.Blocks) == 0 {
		t.Fatal("success without block results")
	}
	// The file's line endings survive: no CRLF appears in an LF-only file from nowhere.
	if !strings.Contains(orig, "\r") && !strings.Contains(body, "\r") && strings.Contains(res.Content, "\r\n") {
		t.Fatalf("CRLF introduced into an LF file")
	}
	// A BOM is kept.
	if strings.HasPrefix(orig, bom) && !strings.HasPrefix(res.Content, bom) {
		t.Fatal("BOM lost")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("```ts // src/a.ts\nx\n```\n```yaml\nprojectId: p\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\n```\n")
	f.Add("```diff // a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n--- a/b.go\n+++ b/b.go\n@@ -1 +1 @@\n-c\n+d\n```\nprojectId: p\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\n")
	f.Add("```\n*** Begin Patch\n*** Add File: x\n+1\n*** Update File: y\n*** Move to: z\n@@\n-a\n+b\n*** Delete File: w\n*** End Patch\n```\n```yml\nprojectId: p\nuuid: 00000000-0000-0000-0000-000000000000\n```")
	f.Add("````md // README.md\n```bash\nls\n```\n````\n```json // rename-file\n{\"from\":\"a\",\"to\":\"b\"}\n```\n")
	if root := corpus.Find("corpus/patch/relaycode-e2e"); root != "" {
		ms, _ := filepath.Glob(filepath.Join(root, "*", "response.md"))
		ps, _ := filepath.Glob(filepath.Join(root, "_parser-fixtures-relaycoder", "*.md"))
		for _, m := range append(ms, ps...) {
			if b, err := os.ReadFile(m); err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<16 {
			t.Skip()
		}
		r, err := Parse(text)
		if err != nil {
			var np *NotPatchError
			var cut *CutOffError
			if !(errors.As(err, &np) && np.Reason != "") && !(errors.As(err, &cut) && cut.Reason != "") {
				t.Fatalf("error is %T %v, want *NotPatchError or *CutOffError with a reason", err, err)
			}
			return
		}
		if len(r.Operations) == 0 || r.Control.ProjectID == "" || r.Control.UUID == "" {
			t.Fatalf("success without operations or control: %+v", r)
		}
		for _, op := range r.Operations {
			switch op.Kind {
			case OpWrite:
				if op.Path == "" {
					t.Fatal("write without path")
				}
				if _, ok := ParseStrategy(string(op.Strategy)); !ok {
					t.Fatalf("invalid strategy %q", op.Strategy)
				}
				// Every parsed operation must be safe to apply (errors are fine, panics are not).
				_, _ = Apply("", false, op.Strategy, op.Content, Options{})
			case OpDelete:
				if op.Path == "" {
					t.Fatal("delete without path")
				}
			case OpRename:
				if op.From == "" || op.To == "" {
					t.Fatal("rename without from/to")
				}
			default:
				t.Fatalf("unknown op kind %q", op.Kind)
			}
		}
	})
}

func FuzzSearchReplace(f *testing.F) {
	f.Add("a\nb\nc\n", "<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n")
	f.Add("\tx\r\n\ty\r\n", "<<<<<<< SEARCH\n:start_line:2\n-------\n    y\n=======\n    z\n    w\n>>>>>>> REPLACE\n")
	addCorpusSeeds(f, "diff-apply/multi-search-replace/*")
	addCorpusSeeds(f, "roo-msr/apply/*")
	// Patterns from real answers: trailing spaces in REPLACE, mixed line endings,
	// a cut-off block, identical SEARCH and REPLACE, a whole file under the strategy.
	f.Add("export { \n    a, \n} from './x';\n", "<<<<<<< SEARCH\nexport { \n    a, \n=======\nexport { \n    a,  \n    b\n>>>>>>> REPLACE\n")
	f.Add("a\r\nb\nc\r\n", "<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n")
	f.Add("a\nb\n", "<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nb\n=======\nB")
	f.Add("a\nb\n", "<<<<<<< SEARCH\nb\n=======\nb\n>>>>>>> REPLACE\n")
	f.Add("class A {\n        run() {\n            go();\n\n            stop();\n        }\n}\n", "<<<<<<< SEARCH\nrun() {\n    go();\n\n    stop();\n=======\nrun() {\n    go();\n\n    stop();\n    done();\n>>>>>>> REPLACE\n")
	addHistorySeeds(f, "multi-search-replace", "search-replace")
	f.Fuzz(func(t *testing.T, orig, body string) { checkApply(t, orig, body, MultiSearchReplace) })
}

func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "@@ -2,1 +2,1 @@\n-b\n+B\n")
	addCorpusSeeds(f, "diff-apply/unified/*")
	addCorpusSeeds(f, "apply-multi-diff/standard-diff/*")
	// Patterns from real answers: a stray blank hunk line before the file's
	// last line, tabs file with a spaces diff, a cut-off last hunk, mixed endings.
	f.Add("a\nb\nc\nd", "@@ -2,3 +2,3 @@\n b\n-c\n+C\n\n-d\n+D\n")
	f.Add("func f() {\n\tif x {\n\t\ty()\n\t}\n}\n", "@@ -2,3 +2,4 @@\n     if x {\n         y()\n+        z()\n     }\n")
	f.Add("a\nb\nc\n", "@@ -2,40 +2,60 @@\n b\n-c\n+C\n")
	f.Add("a\r\nb\nc\nd\r\n", "@@ -2,2 +2,3 @@\n b\n+B\n c\n")
	addHistorySeeds(f, "standard-diff")
	f.Fuzz(func(t *testing.T, orig, body string) { checkApply(t, orig, body, Unified) })
}

func FuzzNewUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "@@ ... @@\n a\n-b\n+B\n c\n")
	addCorpusSeeds(f, "diff-apply/new-unified/*")
	// Patterns from real answers: context that appears twice after the previous
	// hunk, a line edited in front of its indentation, a far context line skipped.
	f.Add("import a;\n\nfunction one() {\n  return `\n`;\n};\n\nfunction two() {\n  return `\n`;\n};", "@@ -1,2 +1,2 @@\n-import a;\n+import b;\n \n@@ -90,3 +90,6 @@\n   return `\n `;\n };\n+\n+function three() {}\n")
	f.Add("const d = `\n     name = 1;\n     other = 2;\n`;\n", "@@ ... @@\n const d = `\n-    name = 1;\n+-    name = 1;\n     other = 2;\n")
	addHistorySeeds(f, "new-unified")
	f.Fuzz(func(t *testing.T, orig, body string) { checkApply(t, orig, body, NewUnified) })
}

func FuzzApplyPatch(f *testing.F) {
	f.Add("class A:\n  def f():\n    return 1\n", "@@ class A:\n@@ def f():\n-    return 1\n+    return 2\n*** End of File\n")
	f.Add("x\n", "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch\n")
	f.Fuzz(func(t *testing.T, orig, body string) { checkApply(t, orig, body, ApplyPatch) })
}

func FuzzReplace(f *testing.F) {
	f.Add("\ufeffa\r\nb", "x\ny\n")
	f.Fuzz(func(t *testing.T, orig, body string) {
		checkApply(t, orig, body, Replace)
		res, err := Apply(orig, true, Replace, body, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Whole-file replace keeps the file's final-newline state when the file has lines.
		// (A trailing empty line without a newline cannot be told apart from a final newline.)
		lines := patchLines(body)
		if strings.TrimPrefix(orig, bom) != "" && len(lines) > 0 && lines[len(lines)-1] != "" {
			if strings.HasSuffix(orig, "\n") != strings.HasSuffix(res.Content, "\n") {
				t.Fatalf("final newline changed: %q -> %q", orig, res.Content)
			}
		}
	})
}

func FuzzApplyEdits(f *testing.F) {
	f.Add("const a = 1;\nconst b = 2;\n", "b = 2", "b = 3", false)
	f.Add("x = 1\nx = 1\n", "x = 1", "x = 2", true)
	f.Add("one\r\ntwo\r\n", "one\ntwo", "ONE\ntwo", false)
	f.Add("func f() {\n\tif x {\n\t\ty()\n\t}\n}\n", "    if x {\n        y()\n    }", "    if x {\n        z()\n    }", false)
	f.Add("if (a &&  b) {   \n  go()\n}\n", "if (a && b) {\n  go()", "if (a && b) {\n  stop()", false)
	f.Add("", "", "new file\n", false)
	f.Fuzz(func(t *testing.T, content, old, nw string, all bool) {
		if len(content) > 1<<16 || len(old) > 1<<12 || len(nw) > 1<<12 {
			t.Skip()
		}
		got, err := ApplyEdits(content, []Edit{{OldString: old, NewString: nw, ReplaceAll: all}})
		if err != nil {
			var ee *EditError
			if !errors.As(err, &ee) || ee.Index != 1 || ee.Error() == "" {
				t.Fatalf("error is %T %v, want *EditError for edit 1", err, err)
			}
			if old == nw && !errors.Is(err, ErrEditNoOp) {
				t.Fatalf("identical old and new: %v, want ErrEditNoOp", err)
			}
			return
		}
		if got == content {
			t.Fatal("success without a change")
		}
		// An exact, unique occurrence in an LF file is a plain substring replacement.
		if old != "" && !strings.Contains(content, "\r") && !strings.Contains(old+nw, "\r") && strings.Count(content, old) == 1 {
			if want := strings.Replace(content, old, nw, 1); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
		// Nothing but whitespace is ever tolerated: the match had old's text.
		if old != "" && strings.Count(squash(content), squash(old)) == 0 && squash(old) != "" {
			t.Fatalf("applied although %q is not in the file even without whitespace", old)
		}
	})
}
