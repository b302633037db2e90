package patch

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/relaydev/relay/internal/testsupport/corpus"
)

// Answers as each tool or chat UI writes them, without relay's control block.
var answerCases = []struct {
	name   string
	text   string
	format Format
	ops    []Operation
}{
	{"git diff, two files, rename, new and deleted", "Here is the change.\n\n```diff\ndiff --git a/src/a.go b/src/a.go\nindex 1..2 100644\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1,2 +1,2 @@\n package a\n-var x = 1\n+var x = 2\ndiff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\ndiff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n```\n", FormatDiff,
		[]Operation{
			{Kind: OpWrite, Path: "src/a.go", Strategy: Unified, Content: "diff --git a/src/a.go b/src/a.go\nindex 1..2 100644\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1,2 +1,2 @@\n package a\n-var x = 1\n+var x = 2\n"},
			{Kind: OpRename, From: "old.txt", To: "new.txt"},
			{Kind: OpWrite, Path: "n.txt", Strategy: Unified, Content: "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n", Create: true},
			{Kind: OpDelete, Path: "gone.txt"},
		}},
	{"bare unified diff followed by prose", "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n\nThis line is prose after the diff.\n", FormatDiff,
		[]Operation{{Kind: OpWrite, Path: "x.py", Strategy: Unified, Content: "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"}}},
	{"bare diff of a markdown file with fences as context", "--- a/README.md\n+++ b/README.md\n@@ -1,4 +1,4 @@\n # Title\n ```ts\n-old()\n+new()\n ```\n", FormatDiff,
		[]Operation{{Kind: OpWrite, Path: "README.md", Strategy: Unified, Content: "--- a/README.md\n+++ b/README.md\n@@ -1,4 +1,4 @@\n # Title\n ```ts\n-old()\n+new()\n ```\n"}}},
	{"CRLF git diff", "--- a/w.txt\r\n+++ b/w.txt\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n", FormatDiff,
		[]Operation{{Kind: OpWrite, Path: "w.txt", Strategy: Unified, Content: "--- a/w.txt\r\n+++ b/w.txt\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"}}},
	{"codex envelope with move", "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def main():\n-    print(1)\n+    print(2)\n*** Delete File: old.py\n*** End Patch\n", FormatCodex,
		[]Operation{
			{Kind: OpWrite, Path: "docs/new.md", Strategy: Replace, Content: "# New\n", Create: true},
			{Kind: OpWrite, Path: "src/app.py", Strategy: ApplyPatch, Content: "@@ def main():\n-    print(1)\n+    print(2)\n"},
			{Kind: OpRename, From: "src/app.py", To: "src/main.py", Overwrite: true},
			{Kind: OpDelete, Path: "old.py"},
		}},
	{"codex envelope in a shell heredoc", "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n", FormatCodex,
		[]Operation{{Kind: OpWrite, Path: "a.txt", Strategy: ApplyPatch, Content: "@@\n-a\n+b\n"}}},
	{"aider SEARCH/REPLACE, two files", "Change both.\n\nsrc/a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\nsrc/b.py\n```python\n<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nz = 1\n=======\nz = 2\n>>>>>>> REPLACE\n```\n", FormatSearchReplace,
		[]Operation{
			{Kind: OpWrite, Path: "src/a.py", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"},
			{Kind: OpWrite, Path: "src/b.py", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nz = 1\n=======\nz = 2\n>>>>>>> REPLACE\n"},
		}},
	{"aider path as the fence's first line", "```\nlib/c.rb\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n", FormatSearchReplace,
		[]Operation{{Kind: OpWrite, Path: "lib/c.rb", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"}}},
	{"Cline replace_in_file", "<replace_in_file>\n<path>src/x.ts</path>\n<diff>\n------- SEARCH\nconst a = 1;\n=======\nconst a = 2;\n+++++++ REPLACE\n</diff>\n</replace_in_file>\n", FormatSearchReplace,
		[]Operation{{Kind: OpWrite, Path: "src/x.ts", Strategy: MultiSearchReplace, Content: "------- SEARCH\nconst a = 1;\n=======\nconst a = 2;\n+++++++ REPLACE\n"}}},
	{"Roo apply_diff with start_line", "<apply_diff>\n<path>src/y.ts</path>\n<diff>\n<<<<<<< SEARCH\n:start_line:3\n-------\nlet b = 1;\n=======\nlet b = 3;\n>>>>>>> REPLACE\n</diff>\n</apply_diff>\n", FormatSearchReplace,
		[]Operation{{Kind: OpWrite, Path: "src/y.ts", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\n:start_line:3\n-------\nlet b = 1;\n=======\nlet b = 3;\n>>>>>>> REPLACE\n"}}},
	{"Claude Code Edit and MultiEdit", "```json\n{\"file_path\": \"src/a.ts\", \"old_string\": \"a\", \"new_string\": \"b\"}\n```\n\n```json\n{\"file_path\": \"src/b.ts\", \"edits\": [{\"old_string\": \"x\", \"new_string\": \"y\", \"replace_all\": true}]}\n```\n", FormatEdit,
		[]Operation{
			{Kind: OpWrite, Path: "src/a.ts", Strategy: EditStrategy, Content: `[{"old_string":"a","new_string":"b"}]`},
			{Kind: OpWrite, Path: "src/b.ts", Strategy: EditStrategy, Content: `[{"old_string":"x","new_string":"y","replace_all":true}]`},
		}},
	{"str_replace_editor commands as JSON Lines", "{\"command\": \"create\", \"path\": \"n.txt\", \"file_text\": \"one\\r\\ntwo\\r\\n\"}\n{\"command\": \"str_replace\", \"path\": \"a.txt\", \"old_str\": \"a\", \"new_str\": \"b\"}\n{\"command\": \"insert\", \"path\": \"a.txt\", \"insert_line\": 0, \"new_str\": \"top\"}\n", FormatEdit,
		[]Operation{
			{Kind: OpWrite, Path: "n.txt", Strategy: EditStrategy, Content: `[{"old_string":"","new_string":"one\r\ntwo\r\n"}]`, Create: true},
			{Kind: OpWrite, Path: "a.txt", Strategy: EditStrategy, Content: `[{"old_string":"a","new_string":"b"},{"old_string":"","new_string":"top","insert_line":0}]`},
		}},
	{"tool call wrapper", `{"name": "Edit", "input": {"file_path": "w.go", "old_string": "1", "new_string": "2"}}`, FormatEdit,
		[]Operation{{Kind: OpWrite, Path: "w.go", Strategy: EditStrategy, Content: `[{"old_string":"1","new_string":"2"}]`}}},
	{"whole files named by info string and by the line before", "Here you go:\n\n```python app/main.py\nprint('hi')\n```\n\n**src/util.ts**\n```ts\nexport const x = 1;\n```\n\nA snippet without a path changes nothing:\n\n```bash\nnpm test\n```\n", FormatWhole,
		[]Operation{
			{Kind: OpWrite, Path: "app/main.py", Strategy: Replace, Content: "print('hi')\n"},
			{Kind: OpWrite, Path: "src/util.ts", Strategy: Replace, Content: "export const x = 1;\n"},
		}},
	{"Cline write_to_file", "<write_to_file>\n<path>notes.md</path>\n<content>\n# Notes\nok\n</content>\n</write_to_file>\n", FormatWhole,
		[]Operation{{Kind: OpWrite, Path: "notes.md", Strategy: Replace, Content: "# Notes\nok\n"}}},
}

func TestParseAnswerFormats(t *testing.T) {
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseAnswer(tc.text, "")
			if err != nil {
				t.Fatalf("ParseAnswer: %v", err)
			}
			if r.Format != tc.format || !r.Bare {
				t.Errorf("format %q bare %v, want %q and bare", r.Format, r.Bare, tc.format)
			}
			if d := cmp.Diff(tc.ops, r.Operations, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("operations (-want +got):\n%s", d)
			}
			if len(r.Control.UUID) != 36 || r.Control.PromptSummary == "" {
				t.Errorf("control %+v: want a generated uuid and a summary", r.Control)
			}
			// Forcing the detected format reads the same operations.
			f, err := ParseAnswer(tc.text, tc.format)
			if err != nil || !cmp.Equal(f.Operations, r.Operations, cmpopts.EquateEmpty()) {
				t.Errorf("forced %s: %v, %+v", tc.format, err, f)
			}
		})
	}
}

func TestParseAnswerRelayFormatUnchanged(t *testing.T) {
	text := "```ts // src/a.ts\nexport const a = 1;\n```\n\n```yaml\nprojectId: p\nuuid: 0b7c5e6a-6f7d-4c33-9b8e-5d0c2f0e9a11\n```\n"
	r, err := ParseAnswer(text, "")
	if err != nil || r.Format != FormatRelay || r.Bare || r.Control.ProjectID != "p" {
		t.Fatalf("relay answer: %+v, %v", r, err)
	}
	// A relay answer whose control block is broken is refused as such, not read as whole files.
	_, err = ParseAnswer(strings.Replace(text, "uuid: 0b7c", "uuid: zz", 1), "")
	var np *NotPatchError
	if !errors.As(err, &np) || !strings.Contains(err.Error(), "invalid control block") {
		t.Fatalf("broken control block: %v", err)
	}
	// --format relay refuses an answer without a control block.
	if _, err := ParseAnswer("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", FormatRelay); err == nil {
		t.Fatal("--format relay accepted a bare diff")
	}
}

func TestParseAnswerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		force            Format
	}{
		{"mixed formats", "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n\nsrc/y.go\n```go\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n", "more than one format: git diff (1 file: x.go) at line 1; SEARCH/REPLACE (1 file: src/y.go) at line 9", ""},
		{"code alone", "Try this:\n\n```go\nfmt.Println(1)\n```\n", "no control block, and no diff", ""},
		{"prose", "Sure, I can help with that.", "no control block", ""},
		{"SEARCH/REPLACE without a path", "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "names no file", ""},
		{"malformed marker", "a.txt\n<<<<<<<SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", `line 2: malformed marker "<<<<<<<SEARCH"`, ""},
		{"separator with text", "a.txt\n<<<<<<< SEARCH\na\n======= b\nb\n>>>>>>> REPLACE\n", `line 4: marker "======= b"`, ""},
		{"cut-off envelope", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n", "cut off", ""},
		{"snippet as a whole file", "src/a.go\n```go\npackage a\n\n// ... existing code ...\n\nfunc B() {}\n```\n", "leaves code out at line 5", ""},
		{"edit without a path", `{"old_string": "a", "new_string": "b"}`, "names no file", ""},
		{"view command", `{"command": "view", "path": "a.txt"}`, "changes nothing relay can apply", ""},
		{"binary diff", "diff --git a/i.png b/i.png\nindex 1..2\nBinary files a/i.png and b/i.png differ\n--- a/i.png\n+++ b/i.png\n@@ -1 +1 @@\n-a\n+b\n", "binary diff", ""},
		{"forced format absent", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "no codex patch changes found", FormatCodex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAnswer(tc.text, tc.force)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// caseText is the text of the answer case with that name.
func caseText(name string) string {
	for _, c := range answerCases {
		if c.name == name {
			return c.text
		}
	}
	panic("no answer case " + name)
}

// Each format, applied: the operations ParseAnswer makes apply through Apply
// as the answer meant.
func TestParseAnswerApplies(t *testing.T) {
	tree := map[string]string{"src/a.go": "package a\nvar x = 1\n", "old.txt": "o\n", "gone.txt": "bye\n", "a.txt": "a\n", "src/app.py": "def main():\n    print(1)\n", "src/main.py": "replaced\n", "old.py": "x\n"}
	r, err := ParseAnswer(caseText("git diff, two files, rename, new and deleted"), "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := applyResponse(tree, r)
	if err != nil {
		t.Fatal(err)
	}
	if out["src/a.go"] != "package a\nvar x = 2\n" || out["new.txt"] != "o\n" || out["n.txt"] != "hi\n" || out["gone.txt"] != "" {
		t.Errorf("git diff applied: %q", out)
	}
	r, err = ParseAnswer(caseText("codex envelope with move"), "")
	if err != nil {
		t.Fatal(err)
	}
	out, err = applyResponse(tree, r)
	if err != nil {
		t.Fatal(err)
	}
	if out["src/main.py"] != "def main():\n    print(2)\n" || out["docs/new.md"] != "# New\n" {
		t.Errorf("codex applied: %q", out)
	}
	// str_replace_editor: create keeps CRLF, insert goes after line 0.
	r, err = ParseAnswer(caseText("str_replace_editor commands as JSON Lines"), "")
	if err != nil {
		t.Fatal(err)
	}
	out, err = applyResponse(tree, r)
	if err != nil {
		t.Fatal(err)
	}
	if out["n.txt"] != "one\r\ntwo\r\n" || out["a.txt"] != "top\nb\n" {
		t.Errorf("str_replace_editor applied: %q", out)
	}
}

// fuzzAnswer checks one fuzzed answer: it either parses to operations that
// name valid paths in the format it reports, or is refused; it never panics.
func fuzzAnswer(t *testing.T, text string, fm Format) {
	if len(text) > 1<<16 {
		return
	}
	r, err := ParseAnswer(text, fm)
	if err != nil {
		return
	}
	if len(r.Operations) == 0 {
		t.Fatalf("no error and no operations")
	}
	if fm != "" && r.Format != fm {
		t.Fatalf("forced %q, got %q", fm, r.Format)
	}
	for _, op := range r.Operations {
		switch op.Kind {
		case OpRename:
			if !validPath(op.From) || !validPath(op.To) {
				t.Fatalf("rename with invalid path: %+v", op)
			}
		default:
			if !validPath(op.Path) {
				t.Fatalf("operation with invalid path: %+v", op)
			}
		}
	}
}

// fuzzFormat seeds a fuzz test with the answer cases of one format (all when "").
func fuzzFormat(f *testing.F, fm Format, extra ...string) {
	for _, tc := range answerCases {
		if fm == "" || tc.format == fm {
			f.Add(tc.text)
		}
	}
	for _, e := range extra {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, text string) { fuzzAnswer(t, text, fm) })
}

func FuzzParseAnswer(f *testing.F) {
	fuzzFormat(f, "", "```\n```", "<path>a</path>\n<content>x")
}

func FuzzParseAnswerDiff(f *testing.F) {
	fuzzFormat(f, FormatDiff, "diff --git \"a/x y\" \"b/x y\"\n--- \"a/x y\"\n+++ \"b/x y\"\n@@ -1 +1 @@\n-a\n+b\n")
}

func FuzzParseAnswerCodex(f *testing.F) {
	fuzzFormat(f, FormatCodex, "*** Begin Patch\n*** End Patch\n", "```\n*** Update File: a\n@@\n-a\n+b\n```\n")
}

func FuzzParseAnswerSearchReplace(f *testing.F) {
	fuzzFormat(f, FormatSearchReplace, "a.txt\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n")
}

func FuzzParseAnswerEdit(f *testing.F) {
	fuzzFormat(f, FormatEdit, `[{"name":"x","arguments":"{\"path\":\"a\",\"command\":\"insert\",\"insert_line\":1,\"insert_text\":\"z\"}"}]`)
}

func FuzzParseAnswerWhole(f *testing.F) {
	fuzzFormat(f, FormatWhole, "### `a/b.c`\n```\nx\n```\n")
}

// historyAnswer writes a history-dev patch as an answer without relay's
// control block, as another tool would: a diff with its own ---/+++ headers
// bare, a headerless diff in a ```diff block named by its path, SEARCH/REPLACE
// blocks under the path line aider writes.
func historyAnswer(path string, p historyPatch) string {
	body := p.body
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	switch p.strategy {
	case Unified, NewUnified:
		if diffStart(patchLines(p.body), 0) >= 0 {
			return "Here is the change.\n\n" + body
		}
		return "```diff " + path + "\n" + body + "```\n"
	}
	return path + "\n```\n" + body + "```\n"
}

// Detection on answers relay has not seen: every real patch of history-dev,
// written as another tool writes it, is read by ParseAnswer in its format and
// for its file, and applies to exactly what the patch applied directly.
func TestParseAnswerOnHistory(t *testing.T) {
	root := corpus.Dir(t, "corpus/patch")
	cases := loadHistory(t, filepath.Join(root, "history-dev"))
	same, total, refused := 0, 0, 0
	for _, c := range cases {
		content := c.input
		direct := c.input
		var directErr, answerErr error
		for _, p := range c.patches {
			total++
			r, err := ParseAnswer(historyAnswer(c.path, p), "")
			if err != nil {
				t.Errorf("%s: %v", c.id, err)
				continue
			}
			want := FormatDiff
			if p.strategy == MultiSearchReplace {
				want = FormatSearchReplace
			}
			if r.Format != want || len(r.Operations) != 1 || r.Operations[0].Path != cleanPath(c.path) {
				t.Errorf("%s: read as %s %+v, want one %s operation for %s", c.id, r.Format, r.Operations, want, c.path)
				continue
			}
			op := r.Operations[0]
			if directErr == nil {
				res, err := Apply(direct, true, p.strategy, p.body, Options{})
				direct, directErr = res.Content, err
			}
			if answerErr == nil {
				res, err := Apply(content, true, op.Strategy, op.Content, Options{})
				content, answerErr = res.Content, err
			}
			switch {
			case (directErr == nil) == (answerErr == nil) && content == direct:
				same++
			case answerErr != nil:
				// Read as a bare diff its numbers are trusted as hints, and a hunk
				// whose number and order disagree is refused: a refusal, not a wrong edit.
				refused++
				t.Logf("%s (%s read as %s): refused: %s", c.id, p.strategy, op.Strategy, firstLine(answerErr.Error()))
			default:
				t.Errorf("%s (%s read as %s): applied differently: %s", c.id, p.strategy, op.Strategy, firstDifference(content, direct))
			}
		}
	}
	t.Logf("%d of %d history-dev patches read through ParseAnswer apply as they do directly; %d refused, the rest wrong", same, total, refused)
}
