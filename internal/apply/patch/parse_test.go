package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const ctl = "```yaml\nprojectId: p\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\n```\n"

func TestParseBlocks(t *testing.T) {
	tests := []struct {
		name string
		resp string
		want []Operation
	}{
		{"lang and // path", "```ts // src/a.ts\nx\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "src/a.ts", Strategy: Replace, Content: "x\n"}}},
		{"path and strategy (seed 002)", "```go // a.go multi-search-replace\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.go", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"}}},
		{"quoted path with spaces", "```tsx // \"src/My Component.tsx\" new-unified\n@@ ... @@\n-a\n+b\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "src/My Component.tsx", Strategy: NewUnified, Content: "@@ ... @@\n-a\n+b\n"}}},
		{"hash comment", "```python # app/main.py\nprint(1)\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "app/main.py", Strategy: Replace, Content: "print(1)\n"}}},
		{"sql comment", "```sql -- db/schema.sql\nselect 1;\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "db/schema.sql", Strategy: Replace, Content: "select 1;\n"}}},
		{"html comment", "```html <!-- web/index.html -->\n<p>hi</p>\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "web/index.html", Strategy: Replace, Content: "<p>hi</p>\n"}}},
		{"longer fence keeps inner fences", "````md // README.md\n# Title\n```bash\nmake\n```\n````\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "README.md", Strategy: Replace, Content: "# Title\n```bash\nmake\n```\n"}}},
		{"inner fence with language nests in a 3-backtick block", "```md // README.md\nRun:\n```bash\nmake\n```\nDone.\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "README.md", Strategy: Replace, Content: "Run:\n```bash\nmake\n```\nDone.\n"}}},
		{"START/END markers are not written", "```ts // a.ts\n// START\nconst a = 1;\n// END\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.ts", Strategy: Replace, Content: "const a = 1;\n"}}},
		{"the prompt template's blank lines inside START/END are not written", "```ts // a.ts\n// START\n\nconst a = 1;\n\nconst b = 2;\n\n// END\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.ts", Strategy: Replace, Content: "const a = 1;\n\nconst b = 2;\n"}}},
		{"repeated path comment is dropped", "```ts // src/a.ts\n// src/a.ts\nconst a = 1;\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "src/a.ts", Strategy: Replace, Content: "const a = 1;\n"}}},
		{"delete", "```ts // old.ts\n//TODO: delete this file\n```\n```ts // old2.ts\n// TODO: delete this file\n```\n" + ctl,
			[]Operation{{Kind: OpDelete, Path: "old.ts"}, {Kind: OpDelete, Path: "old2.ts"}}},
		{"rename", "```json // rename-file\n{\"from\": \"a b.ts\", \"to\": \"c.ts\"}\n```\n" + ctl,
			[]Operation{{Kind: OpRename, From: "a b.ts", To: "c.ts"}}},
		{"1.1 alias names", "```diff // a.go standard-diff\n@@ -1 +1 @@\n-a\n+b\n```\n```go // b.go search-replace\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.go", Strategy: Unified, Content: "@@ -1 +1 @@\n-a\n+b\n"}, {Kind: OpWrite, Path: "b.go", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"}}},
		{"unknown second word is part of the path", "```js // src/index.js invalid-strategy\nx\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "src/index.js invalid-strategy", Strategy: Replace, Content: "x\n"}}},
		{"inferred strategies", "```go // a.go\n--- a/a.go\n+++ b/a.go\n@@ ... @@\n-a\n+b\n```\n```go // b.go\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.go", Strategy: NewUnified, Content: "--- a/a.go\n+++ b/a.go\n@@ ... @@\n-a\n+b\n"}, {Kind: OpWrite, Path: "b.go", Strategy: MultiSearchReplace, Content: "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"}}},
		{"SEARCH marker without REPLACE is file content", "```md // doc.md\nUse <<<<<<< SEARCH to start.\n<<<<<<< SEARCH\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "doc.md", Strategy: Replace, Content: "Use <<<<<<< SEARCH to start.\n<<<<<<< SEARCH\n"}}},
		{"multi-file diff is split per file", "```diff // a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n--- a/b.go\n+++ b/b.go\n@@ -1 +1 @@\n-c\n+d\n--- a/gone.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "a.go", Strategy: Unified, Content: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n"}, {Kind: OpWrite, Path: "b.go", Strategy: Unified, Content: "--- a/b.go\n+++ b/b.go\n@@ -1 +1 @@\n-c\n+d\n"}, {Kind: OpDelete, Path: "gone.go"}}},
		{"codex envelope", "```\n*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Delete File: old.txt\n*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "new.txt", Strategy: Replace, Content: "hello\n"}, {Kind: OpDelete, Path: "old.txt"}, {Kind: OpWrite, Path: "a.py", Strategy: ApplyPatch, Content: "@@ def f():\n-    return 1\n+    return 2\n"}, {Kind: OpRename, From: "a.py", To: "b.py", Overwrite: true}}},
		// A block written with CRLF keeps it: a new file gets CRLF, an existing one its own endings.
		{"CRLF response", strings.ReplaceAll("```ts // a.ts\nx\n```\n"+ctl, "\n", "\r\n"),
			[]Operation{{Kind: OpWrite, Path: "a.ts", Strategy: Replace, Content: "x\r\n"}}},
		{"yaml block with a path is a file", "```yaml // config.yml\nkey: 1\n```\n" + ctl,
			[]Operation{{Kind: OpWrite, Path: "config.yml", Strategy: Replace, Content: "key: 1\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, r.Operations); d != "" {
				t.Errorf("operations (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseControl(t *testing.T) {
	const op = "```ts // a.ts\nx\n```\n"
	tests := []struct {
		name    string
		resp    string
		want    Control
		notErr  string // substring of the NotPatchError reason
		reasons []string
	}{
		{name: "yml block, list commit message", resp: "Intro line.\n" + op + "Between.\n```yml\nprojectId: p\nuuid: 5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5\nchangeSummary:\n  - edit: a.ts\n  - rename: b.ts\ngitCommitMsg:\n  - 'feat: x'\n  - body\npromptSummary: do x\n```\n",
			want:    Control{ProjectID: "p", UUID: "5e1a41d8-64a7-4663-c56e-3ebd03f7a1f5", ChangeSummary: []ChangeSummaryItem{{"edit", "a.ts"}, {"rename", "b.ts"}}, GitCommitMsg: "feat: x\nbody", PromptSummary: "do x"},
			reasons: []string{"Intro line.", "Between."}},
		{name: "bare tail", resp: op + "\nprojectId: p\nuuid: 00000000-0000-0000-0000-000000000000\ngitCommitMsg: fix\n",
			want: Control{ProjectID: "p", UUID: "00000000-0000-0000-0000-000000000000", GitCommitMsg: "fix"}},
		{name: "last yaml block wins", resp: op + "```yaml\nprojectId: old\nuuid: 00000000-0000-0000-0000-000000000000\n```\n```yaml\nprojectId: new\nuuid: 00000000-0000-0000-0000-000000000001\n```\n",
			want: Control{ProjectID: "new", UUID: "00000000-0000-0000-0000-000000000001"}},
		{name: "bare yaml not at the end", resp: "projectId: p\nuuid: 00000000-0000-0000-0000-000000000000\n" + op, notErr: "no control block"},
		{name: "uuid in capitals is lowercased", resp: op + "```yaml\nprojectId: p\nuuid: 0B2C1A52-0A7E-4D7E-9B1A-0C9D8E7F6A05\n```\n",
			want: Control{ProjectID: "p", UUID: "0b2c1a52-0a7e-4d7e-9b1a-0c9d8e7f6a05"}},
		{name: "uuid must be a UUID", resp: op + "```yaml\nprojectId: p\nuuid: not-a-uuid\n```\n", notErr: `uuid "not-a-uuid" is not a UUID`},
		{name: "missing projectId", resp: op + "```yaml\nuuid: 00000000-0000-0000-0000-000000000000\n```\n", notErr: "projectId is missing"},
		{name: "no operations", resp: "```\nexample\n```\n" + ctl, notErr: "no file operations; 1 code block ignored: no file path in the header"},
		{name: "plain text", resp: "hello", notErr: "no control block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.resp)
			if tt.notErr != "" {
				var np *NotPatchError
				if !errors.As(err, &np) || !strings.Contains(np.Reason, tt.notErr) {
					t.Fatalf("err = %v, want NotPatchError containing %q", err, tt.notErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, r.Control); d != "" {
				t.Errorf("control (-want +got):\n%s", d)
			}
			if tt.reasons != nil {
				if d := cmp.Diff(tt.reasons, r.Reasoning); d != "" {
					t.Errorf("reasoning (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestParseIgnored(t *testing.T) {
	r, err := Parse("```\nexample without a path\n```\n```ts // \"a.ts\" bogus\nx\n```\n```json // rename-file\n{\"from\": \"\"}\n```\n```ts // b.ts\ny\n```\n```ts // src/utils/\nz\n```\n" + ctl)
	if err != nil {
		t.Fatal(err)
	}
	want := []IgnoredBlock{
		{Line: 1, Header: "", Reason: "no file path in the header"},
		{Line: 4, Header: `ts // "a.ts" bogus`, Reason: `malformed header: unknown strategy "bogus" after the quoted path`},
		{Line: 7, Header: "json // rename-file", Reason: `rename-file block needs non-empty "from" and "to"`},
		{Line: 13, Header: "ts // src/utils/", Reason: `"src/utils/" ends with a slash: it names a directory, not a file`},
	}
	if d := cmp.Diff(want, r.Ignored); d != "" {
		t.Errorf("ignored (-want +got):\n%s", d)
	}
	if len(r.Operations) != 1 || r.Operations[0].Path != "b.ts" {
		t.Errorf("ops = %+v", r.Operations)
	}
}

func TestUnfence(t *testing.T) {
	body, st, ok := Unfence("\n```go // a.go multi-search-replace\n<<<<<<< SEARCH\n```\n\n")
	if !ok || st != MultiSearchReplace || body != "<<<<<<< SEARCH\n" {
		t.Errorf("Unfence = %q, %q, %v", body, st, ok)
	}
	if _, _, ok := Unfence("text\n```\nx\n```\n"); ok {
		t.Error("text before the fence must not unfence")
	}
}

// TestControlYAMLErrorNamesAnswerLine: a YAML error in the control block names the line of
// the answer the user reads, not the line inside the block.
func TestControlYAMLErrorNamesAnswerLine(t *testing.T) {
	const body = "```ts // a.ts\nconst a = 1;\n```\n"
	for _, tt := range []struct {
		name, answer, want string
	}{
		{"fenced", "Fix it.\n\n" + body + "\n```yaml\nprojectId: y\nuuid: 6f1c2e0a-8b7d-4c1e-9f2a-3b4c5d6e7f80\nchangeSummary: x: y\n```\n",
			"invalid control block: not valid YAML: line 10: mapping values are not allowed in this context"},
		{"duplicate key", body + "```yaml\nprojectId: y\nprojectId: z\n```\n",
			"invalid control block: not valid YAML: unmarshal errors:"},
		{"bare tail", body + "\nprojectId: y\nuuid: x: y\n",
			"invalid control block: not valid YAML: line 6: mapping values are not allowed in this context"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.answer)
			var np *NotPatchError
			if !errors.As(err, &np) || !strings.HasPrefix(np.Reason, tt.want) {
				t.Fatalf("Parse error = %v; want a NotPatchError starting %q", err, tt.want)
			}
		})
	}
	if got := answerLines("yaml: unmarshal errors:\n  line 2: mapping key \"x\" already defined at line 1", 7); got != "unmarshal errors:\n  line 8: mapping key \"x\" already defined at line 7" {
		t.Errorf("answerLines = %q", got)
	}
}
