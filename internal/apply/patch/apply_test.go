package patch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sr(blocks ...[2]string) string {
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString("<<<<<<< SEARCH\n" + bl[0] + "=======\n" + bl[1] + ">>>>>>> REPLACE\n")
	}
	return b.String()
}

func TestApplyKeepsFileFormat(t *testing.T) {
	tests := []struct {
		name, orig, body, want string
		st                     Strategy
	}{
		{"CRLF stays CRLF", "a\r\nb\r\nc\r\n", sr([2]string{"b\n", "B\nB2\n"}), "a\r\nB\r\nB2\r\nc\r\n", MultiSearchReplace},
		{"CRLF patch on LF file", "a\nb\n", "<<<<<<< SEARCH\r\nb\r\n=======\r\nB\r\n>>>>>>> REPLACE\r\n", "a\nB\n", MultiSearchReplace},
		{"BOM kept", "\ufeffa\nb\n", sr([2]string{"a\n", "A\n"}), "\ufeffA\nb\n", MultiSearchReplace},
		{"no final newline kept", "a\nb", sr([2]string{"b\n", "B\n"}), "a\nB", MultiSearchReplace},
		{"append after a last line without newline", "a\nb", "@@ -1,2 +1,3 @@\n a\n b\n+c\n", "a\nb\nc", Unified},
		{"mixed endings: a diff leaves untouched lines alone", "a\r\nb\nc\r\nd\r\n", "@@ -3 +3 @@\n-c\n+C\n", "a\r\nb\nC\nd\r\n", Unified},
		{"mixed endings: a new diff line takes its neighbour's", "a\r\nb\nc\nd\r\ne\r\n", "@@ -2,2 +2,3 @@\n b\n+B\n c\n", "a\r\nb\nB\nc\nd\r\ne\r\n", Unified},
		{"mixed endings: SEARCH/REPLACE writes CRLF", "a\r\nb\nc\r\nd\r\n", sr([2]string{"c\n", "C\n"}), "a\r\nb\r\nC\r\nd\r\n", MultiSearchReplace},
		{"replace keeps CRLF and final newline state", "x\r\ny", "1\n2\n", "1\r\n2", Replace},
		{"tabs file, spaces patch (indentation-level match)", "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n", sr([2]string{"    if x {\n        y()\n    }\n", "    if x {\n        y()\n        z()\n    }\n"}), "func f() {\n\tif x {\n\t\ty()\n\t\tz()\n\t}\n}\n", MultiSearchReplace},
		{"spaces file, tabs patch", "def f():\n    if x:\n        y()\n", sr([2]string{"\tif x:\n\t\ty()\n", "\tif x:\n\t\ty()\n\t\tz()\n"}), "def f():\n    if x:\n        y()\n        z()\n", MultiSearchReplace},
		{"re-indent by the shift of the match", "class A:\n        def f(self):\n            return 1\n", sr([2]string{"def f(self):\n    return 1\n", "def f(self):\n    if self.x:\n        return 2\n    return 1\n"}), "class A:\n        def f(self):\n            if self.x:\n                return 2\n            return 1\n", MultiSearchReplace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(tt.orig, true, tt.st, tt.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tt.want {
				t.Errorf("got %q, want %q", res.Content, tt.want)
			}
		})
	}
}

func TestApplyWholeOrNothing(t *testing.T) {
	orig := "one\ntwo\nthree\nfour\n"
	body := sr([2]string{"one\n", "ONE\n"}, [2]string{"thre\n", "THREE\n"}, [2]string{"four\n", "FOUR\n"}, [2]string{"missing entirely\n", "x\n"})
	res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *ApplyError", err)
	}
	if res.Content != "" {
		t.Errorf("a failed patch must return no content, got %q", res.Content)
	}
	if got := []int{ae.Failures[0].Index, ae.Failures[1].Index}; len(ae.Failures) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("failures = %+v, want blocks 2 and 4", ae.Failures)
	}
	msg := err.Error()
	for _, want := range []string{"multi-search-replace patch does not apply: 2 of 4 blocks failed", "block 2 of 4: SEARCH not found; closest match at line 3 (80% similar)", "block 4 of 4: SEARCH not found"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestApplyAmbiguity(t *testing.T) {
	orig := "x()\ny()\nx()\n"
	_, err := Apply(orig, true, MultiSearchReplace, sr([2]string{"x()\n", "z()\n"}), Options{})
	if err == nil || !strings.Contains(err.Error(), "SEARCH matches 2 places (lines 1, 3)") {
		t.Fatalf("err = %v, want ambiguity", err)
	}
	// A line hint picks one.
	res, err := Apply(orig, true, MultiSearchReplace, "<<<<<<< SEARCH\n:start_line:3\n-------\nx()\n=======\nz()\n>>>>>>> REPLACE\n", Options{})
	if err != nil || res.Content != "x()\ny()\nz()\n" {
		t.Fatalf("with hint: %q, %v", res.Content, err)
	}
	// A unified hunk's line number is a hint too (with drift).
	res, err = Apply(orig, true, Unified, "@@ -4,1 +4,1 @@\n-x()\n+z()\n", Options{})
	if err != nil || res.Content != "x()\ny()\nz()\n" {
		t.Fatalf("unified hint: %q, %v", res.Content, err)
	}
}

func TestApplyAlreadyApplied(t *testing.T) {
	orig := "package a\n\nfunc F() int {\n\treturn 1\n}\n"
	patches := []struct {
		st   Strategy
		body string
	}{
		{MultiSearchReplace, sr([2]string{"\treturn 1\n", "\treturn compute(2)\n"})},
		{Unified, "@@ -3,3 +3,4 @@\n func F() int {\n+\tlog.Println(\"called\")\n \treturn 1\n }\n"},
		{NewUnified, "@@ ... @@\n func F() int {\n-\treturn 1\n+\treturn compute(2)\n }\n"},
		{ApplyPatch, "@@ func F() int {\n-\treturn 1\n+\treturn compute(2)\n"},
	}
	for _, p := range patches {
		t.Run(string(p.st), func(t *testing.T) {
			res, err := Apply(orig, true, p.st, p.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Apply(res.Content, true, p.st, p.body, Options{})
			var ae *ApplyError
			if !errors.As(err, &ae) || !ae.AlreadyApplied || !strings.HasPrefix(err.Error(), "the change is already present") {
				t.Fatalf("second apply: %v", err)
			}
		})
	}
}

func TestApplyCreate(t *testing.T) {
	tests := []struct {
		st   Strategy
		body string
	}{
		{Replace, "hello\nworld\n"},
		{Unified, "--- /dev/null\n+++ b/x.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"},
		{NewUnified, "@@ ... @@\n+hello\n+world\n"},
		{MultiSearchReplace, sr([2]string{"", "hello\nworld\n"})},
		{ApplyPatch, "*** Begin Patch\n*** Add File: x.txt\n+hello\n+world\n*** End Patch\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.st), func(t *testing.T) {
			res, err := Apply("", false, tt.st, tt.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != "hello\nworld\n" {
				t.Errorf("got %q", res.Content)
			}
			if m := res.Blocks[0].Method; m != "create" {
				t.Errorf("method = %q, want create", m)
			}
		})
	}
}

func TestApplyPatchFormat(t *testing.T) {
	orig := "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n"
	// The @@ anchors pick class B's f, though the chunk alone matches twice.
	body := "@@ class B:\n@@     def f(self):\n-        return 1\n+        return 2\n"
	res, err := Apply(orig, true, ApplyPatch, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(orig, "return 1\n", "return 2\n", 2)
	want = strings.Replace(want, "return 2\n", "return 1\n", 1)
	if res.Content != want {
		t.Errorf("got\n%s\nwant\n%s", res.Content, want)
	}
	// *** End of File pins the chunk to the end.
	res, err = Apply("x\ny\nx\n", true, ApplyPatch, "@@\n-x\n+z\n*** End of File\n", Options{})
	if err != nil || res.Content != "x\ny\nz\n" {
		t.Errorf("end of file: %q, %v", res.Content, err)
	}
	// An envelope with several files is for relay apply, not one file.
	_, err = Apply("x\n", true, ApplyPatch, "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** Update File: b\n@@\n-x\n+y\n*** End Patch\n", Options{})
	if err == nil || !strings.Contains(err.Error(), "the patch changes 2 files (a, b)") {
		t.Errorf("multi-file envelope: %v", err)
	}
}

func TestApplyErrorsAreTyped(t *testing.T) {
	bad := []struct {
		st   Strategy
		body string
		msg  string
	}{
		{MultiSearchReplace, "no markers here\n", "no SEARCH/REPLACE blocks found"},
		{MultiSearchReplace, "<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", ">>>>>>> REPLACE before ======="},
		{Unified, "just text\n", "no hunks found"},
		{Unified, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "the diff changes 2 files (x, y)"},
		{NewUnified, "@@ ... @@\n+only added\n", "hunk has no context or removed lines"},
		{"bogus", "x", `unknown strategy "bogus"`},
	}
	for _, b := range bad {
		_, err := Apply("a\n", true, b.st, b.body, Options{})
		var ae *ApplyError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("%s %q: err = %v, want *ApplyError containing %q", b.st, b.body, err, b.msg)
		}
	}
}

func TestApplyFuzzyThreshold(t *testing.T) {
	orig := "total := computeTotal(items, rate)\nreturn total\n"
	body := sr([2]string{"total := computeTotl(items, rate)\nreturn totl\n", "total := computeTotal(items, rate) + tax\nreturn total\n"})
	res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]BlockResult{{Index: 1, Status: "applied", Line: 1, Method: "fuzzy", Similarity: 0.957}}, res.Blocks); d != "" {
		t.Errorf("blocks (-want +got):\n%s", d)
	}
	if _, err := Apply(orig, true, MultiSearchReplace, body, Options{FuzzyThreshold: 0.99}); err == nil {
		t.Error("threshold 0.99 must refuse a 95% match")
	}
}

// A marker that is almost right is refused with its line: guessing what it
// meant applied wrong edits on answers relay had not seen.
func TestSearchReplaceMalformedMarkersRefused(t *testing.T) {
	orig := "a\nb\nc\n"
	for _, tc := range []struct{ body, line string }{
		{"<<<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n", `line 1: malformed marker "<<<<<<<<< SEARCH"`},
		{"<<<<<<<SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n", `line 1: malformed marker "<<<<<<<SEARCH"`},
		{"<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n", `line 1: malformed marker "<<<<< SEARCH"`},
		{"<<<<<<< SEARCH\nb\n=======REPLACE\nB\n>>>>>>> REPLACE\n", `line 3: marker "=======REPLACE" inside a SEARCH section`},
		{"<<<<<<< SEARCH\nb\n======= B\n>>>>>>> REPLACE\n", `line 3: marker "======= B"`},
		{"<<<<<<< SEARCH\nb\n=========\nB\n>>>>>>> REPLACE\n", `line 3: marker "========="`},
		{"<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>>>> REPLACE\n", `line 5: marker ">>>>>>>>> REPLACE"`},
		{"<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>>REPLACE\n", `line 5: marker ">>>>>>>REPLACE"`},
	} {
		_, err := Apply(orig, true, MultiSearchReplace, tc.body, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%q: err = %v, want a refusal naming %s", tc.body, err, tc.line)
		}
	}
}

func TestSearchReplaceMarkerVariants(t *testing.T) {
	orig := "a\nb\nc\n"
	for _, body := range []string{
		"  <<<<<<< SEARCH  \nb\n  =======\nB\n  >>>>>>> REPLACE\n",
		"------- SEARCH\nb\n=======\nB\n+++++++ REPLACE\n",
		"<<<<<<< SEARCH>\n:start_line:2\n-------\nb\n=======\nB\n>>>>>>> REPLACE\n",
		"<<<<<<< SEARCH\n2 | b\n=======\n2 | B\n>>>>>>> REPLACE\n",
		"file.txt\n<<<<<<< SEARCH\nb\n=======\nB\n>>>>>>> REPLACE\n",
	} {
		res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
		if err != nil || res.Content != "a\nB\nc\n" {
			t.Errorf("%q: got %q, %v", body, res.Content, err)
		}
	}
	// Escaped markers are content.
	res, err := Apply("x\n", true, MultiSearchReplace, "<<<<<<< SEARCH\nx\n=======\n\\=======\n>>>>>>> REPLACE\n", Options{})
	if err != nil || res.Content != "=======\n" {
		t.Errorf("escaped separator: %q, %v", res.Content, err)
	}
}

func TestSequentialBlocks(t *testing.T) {
	// Block 2 searches text that block 1 produced.
	res, err := Apply("a\nb\n", true, MultiSearchReplace, sr([2]string{"a\n", "x\n"}, [2]string{"x\nb\n", "y\n"}), Options{})
	if err != nil || res.Content != "y\n" {
		t.Fatalf("got %q, %v", res.Content, err)
	}
}

func TestBlankLinesDiffer(t *testing.T) {
	orig := "func a() {\n\tx := 1\n\n\ty := 2\n\treturn x + y\n}\n"
	tests := []struct{ name, body, want string }{
		{"SEARCH lost a blank line", sr([2]string{"\tx := 1\n\ty := 2\n", "\tx := 10\n\ty := 2\n"}), "func a() {\n\tx := 10\n\n\ty := 2\n\treturn x + y\n}\n"},
		{"SEARCH gained a blank line", sr([2]string{"\ty := 2\n\n\treturn x + y\n", "\ty := 2\n\n\treturn x * y\n"}), "func a() {\n\tx := 1\n\n\ty := 2\n\treturn x * y\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(orig, true, MultiSearchReplace, tt.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tt.want {
				t.Errorf("got %q\nwant %q", res.Content, tt.want)
			}
			if res.Blocks[0].Method != "fuzzy" {
				t.Errorf("method = %s, want fuzzy", res.Blocks[0].Method)
			}
			if _, err := Apply(res.Content, true, MultiSearchReplace, tt.body, Options{}); err == nil {
				t.Error("second application succeeded")
			}
		})
	}
}

func TestSearchReplaceSplitsLikeAHunk(t *testing.T) {
	orig := "func a() {\n\tsetup()\n\tlog(\"a\")\n\tx := 1\n\treturn x\n}\n"
	// SEARCH lost the log line between its context and the change.
	body := sr([2]string{"func a() {\n\tsetup()\n\tx := 1\n\treturn x\n", "func a() {\n\tsetup()\n\tx := 2\n\treturn x\n"})
	res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(orig, "x := 1", "x := 2", 1); res.Content != want {
		t.Errorf("got %q, want %q", res.Content, want)
	}
	// Context that is nowhere near the change is not dropped: that is another place.
	body = sr([2]string{"func b() {\n\tsetup()\n\tx := 1\n\treturn x\n", "func b() {\n\tsetup()\n\tx := 2\n\treturn x\n"})
	if _, err := Apply(orig, true, MultiSearchReplace, body, Options{}); err == nil {
		t.Error("a SEARCH for func b applied inside func a")
	}
}

// An apply-patch chunk without an @@ anchor that matches two places is refused,
// not applied to the first one; an anchor picks the place.
func TestApplyPatchUnanchoredAmbiguous(t *testing.T) {
	orig := "def f():\n    return 1\n\ndef g():\n    return 1\n"
	_, err := Apply(orig, true, ApplyPatch, "-    return 1\n+    return 2\n", Options{})
	if err == nil || !strings.Contains(err.Error(), "matches 2 places") {
		t.Fatalf("unanchored ambiguous chunk: err = %v, want 'matches 2 places'", err)
	}
	res, err := Apply(orig, true, ApplyPatch, "@@ def g():\n-    return 1\n+    return 2\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "def f():\n    return 1\n\ndef g():\n    return 2\n"; res.Content != want {
		t.Errorf("anchored chunk: got %q, want %q", res.Content, want)
	}
}

// An empty-SEARCH insertion at :start_line: applied a second time reports the
// change as already present instead of inserting it twice.
func TestInsertionAppliedTwiceIsAlreadyPresent(t *testing.T) {
	orig := "func a() {\n\treturn 1\n}\n\nfunc b() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"
	body := "<<<<<<< SEARCH\n:start_line: 7\n-------\n=======\n\t\tlog.Print(\"two\")\n>>>>>>> REPLACE\n"
	res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(res.Content, true, MultiSearchReplace, body, Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) || !ae.AlreadyApplied {
		t.Fatalf("second application: err = %v, want an already-applied error", err)
	}
}

// The same for an apply-patch insertion placed by its @@ anchor.
func TestAnchoredInsertionAppliedTwiceIsAlreadyPresent(t *testing.T) {
	body := "@@ line one\n+another inserted line\n"
	res, err := Apply("line one\nline two\n", true, ApplyPatch, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(res.Content, true, ApplyPatch, body, Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) || !ae.AlreadyApplied {
		t.Fatalf("second application: err = %v, want an already-applied error", err)
	}
}

// A git diff that only renames (no hunk) must never become the file's new content.
func TestRenameOnlyDiffIsNotReplacement(t *testing.T) {
	body := "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
	if got := InferStrategy(body); got == Replace {
		t.Fatalf("InferStrategy(rename-only diff) = %q, want a diff strategy", got)
	}
	if res, err := Apply("hello\n", true, "", body, Options{}); err == nil {
		t.Fatalf("Apply(rename-only diff) = %q, want an error", res.Content)
	}
}
