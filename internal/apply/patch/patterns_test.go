package patch

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each test here is named after a pattern seen in real LLM answers that an
// engine got wrong; the history corpus holds the cases they came from.

// A block that changes nothing is a mistake in the answer: Claude Code,
// opencode, Roo and gemini-cli refuse it, and so does relay, naming the block.
func TestPatternSearchEqualsReplaceIsRefused(t *testing.T) {
	orig := "a\nb\nc\n"
	for _, tc := range []struct {
		name, body string
		st         Strategy
		want       string
		noOp       bool
	}{
		{"one of two blocks", "<<<<<<< SEARCH\na\n=======\na\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n=======\nC\n>>>>>>> REPLACE\n", MultiSearchReplace, "block 1 of 2: SEARCH and REPLACE are identical", false},
		{"the only block", "<<<<<<< SEARCH\nb\n=======\nb\n>>>>>>> REPLACE\n", MultiSearchReplace, "the patch changes nothing: SEARCH and REPLACE are identical", true},
		{"an edit", `{"old_string": "b", "new_string": "b"}`, EditStrategy, "old_string and new_string are identical", true},
		{"one of two edits", `[{"old_string": "a", "new_string": "A"}, {"old_string": "b", "new_string": "b"}]`, EditStrategy, "edit 2 of 2: old_string and new_string are identical", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(orig, true, tc.st, tc.body, Options{})
			var ae *ApplyError
			if !errors.As(err, &ae) || ae.AlreadyApplied || ae.NoOp != tc.noOp || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (%+v), want a refusal containing %q with NoOp=%v", err, ae, tc.want, tc.noOp)
			}
		})
	}
}

func applyOK(t *testing.T, orig string, st Strategy, body string) Result {
	t.Helper()
	res, err := Apply(orig, true, st, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantContent(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// Whitespace fidelity: a SEARCH/REPLACE block's REPLACE lines are written
// without trailing whitespace (the answer's stray spaces never reach the file),
// while a diff's + lines are written byte for byte.
func TestPatternWhitespaceFidelityReplaceLinesLoseTrailingSpaces(t *testing.T) {
	orig := "export { \n    a, \n    b\n} from './x';\n"
	res := applyOK(t, orig, MultiSearchReplace, sr([2]string{"export { \n    a, \n    b\n", "export { \n    a, \n    b,  \n    c\n"}))
	wantContent(t, res.Content, "export {\n    a,\n    b,\n    c\n} from './x';\n")
	res = applyOK(t, "a\nb\n", Unified, "@@ -1,2 +1,3 @@\n a\n+x  \n b\n")
	wantContent(t, res.Content, "a\nx  \nb\n")
}

// Whitespace fidelity: a blank context line matches the file's blank line
// whatever spaces either holds, and the file keeps its own.
func TestPatternWhitespaceFidelityBlankLinesKeepTheFilesSpaces(t *testing.T) {
	orig := "func a() {\n    x()\n    \n    y()\n}\n"
	res := applyOK(t, orig, Unified, "@@ -2,3 +2,3 @@\n     x()\n \n-    y()\n+    z()\n")
	wantContent(t, res.Content, "func a() {\n    x()\n    \n    z()\n}\n")
}

// Whitespace fidelity: a raw empty line inside a hunk that the file does not
// have at that place is dropped, not written after the hunk's last line, and
// a file without a final newline keeps none.
func TestPatternWhitespaceFidelityStrayBlankHunkLine(t *testing.T) {
	orig := "a\nb\nc\nd"
	res := applyOK(t, orig, Unified, "@@ -2,3 +2,3 @@\n b\n-c\n+C\n\n-d\n+D\n")
	wantContent(t, res.Content, "a\nb\nC\nD")
}

// Indentation of added lines: a space-indented answer against a tab-indented
// file lands its new lines at their depth relative to the matched context.
func TestPatternIndentationRelativeToMatchedContext(t *testing.T) {
	orig := "func f() {\n\tif x {\n\t\ty()\n\t}\n\n\tw()\n}\n"
	body := "@@ -2,5 +2,7 @@\n     if x {\n         y()\n+        if z {\n+            q()\n+        }\n     }\n \n     w()\n"
	res := applyOK(t, orig, Unified, body)
	wantContent(t, res.Content, "func f() {\n\tif x {\n\t\ty()\n\t\tif z {\n\t\t\tq()\n\t\t}\n\t}\n\n\tw()\n}\n")
}

// Indentation of added lines: a blank context line does not reset the shift,
// so lines after it are not left one level too shallow.
func TestPatternIndentationShiftSurvivesBlankContext(t *testing.T) {
	orig := "class A {\n        run() {\n            go();\n\n            stop();\n        }\n}\n"
	body := sr([2]string{"run() {\n    go();\n\n    stop();\n", "run() {\n    go();\n\n    stop();\n    done();\n"})
	res := applyOK(t, orig, MultiSearchReplace, body)
	wantContent(t, res.Content, "class A {\n        run() {\n            go();\n\n            stop();\n            done();\n        }\n}\n")
}

// Indentation of added lines: a changed line whose old text differs from the
// file's only in indentation is that line edited; text the answer put in front
// of it goes in front of the file's line, which keeps its own indentation.
func TestPatternIndentationEditedLineKeepsFileIndent(t *testing.T) {
	orig := "const d = `\n     name = 1;\n     other = 2;\n`;\n"
	res := applyOK(t, orig, NewUnified, "@@ ... @@\n const d = `\n-    name = 1;\n+-    name = 1;\n     other = 2;\n")
	wantContent(t, res.Content, "const d = `\n-     name = 1;\n     other = 2;\n`;\n")
}

// Misplaced insertion: new-unified hunks come in file order, so a hunk whose
// context appears twice after the previous hunk goes to the first place after
// it, whatever its (untrusted) line numbers say.
func TestPatternMisplacedInsertionFirstAfterPreviousHunk(t *testing.T) {
	orig := "import a;\n\nfunction one() {\n  return `\n`;\n};\n\nfunction two() {\n  return `\n`;\n};"
	body := "@@ -1,2 +1,2 @@\n-import a;\n+import b;\n \n@@ -90,3 +90,6 @@\n   return `\n `;\n };\n+\n+function three() {}\n"
	res := applyOK(t, orig, NewUnified, body)
	wantContent(t, res.Content, "import b;\n\nfunction one() {\n  return `\n`;\n};\n\nfunction three() {}\n\nfunction two() {\n  return `\n`;\n};")
}

// Refusing good patches: a hunk whose change and near context match once,
// exactly, is applied even when a far context line differs because the answer
// skipped a few lines of the file there.
func TestPatternCloseUniqueHunkIsApplied(t *testing.T) {
	var b strings.Builder
	b.WriteString("function read() {\n  const data = load();\n  if (!data) return null;\n  try {\n    return parse(data);\n  } catch (e) {\n    throw wrap(e);\n  }\n};\n\n")
	b.WriteString("function write() {\n  mkdir();\n  const s = stringify();\n  save(s);\n  sync();\n};\n\nfunction full() {\n  return all();\n}\n")
	orig := b.String()
	body := "@@ ... @@\n   const data = load();\n   if (!data) return null;\n   try {\n-    return parse(data);\n+    return parse(data, schema);\n   } catch (e) {\n     throw wrap(e);\n   }\n };\n \n function full() {\n"
	res := applyOK(t, orig, NewUnified, body)
	wantContent(t, res.Content, strings.Replace(orig, "return parse(data);", "return parse(data, schema);", 1))
	// The same change whose near context also matches elsewhere stays refused.
	twice := orig + "\nfunction again() {\n  const data = load();\n  if (!data) return null;\n  try {\n    return parse(data);\n  } catch (e) {\n    throw wrap(e);\n  }\n};\n"
	if _, err := Apply(twice, true, NewUnified, "@@ ... @@\n   try {\n-    return parse(data);\n+    return parse(data, schema);\n   } catch (e) {\n", Options{}); err == nil {
		t.Fatal("an ambiguous hunk was applied")
	}
}

// CRLF: in a file with mixed endings a diff's new lines take the ending of the
// line above them; SEARCH/REPLACE writes the file in CRLF, even when LF lines
// (picked up from earlier patches) outnumber the CRLF ones.
func TestPatternCRLFMixedFile(t *testing.T) {
	orig := "a\r\nb\r\nc\nd\n\r\ne\r\n"
	res := applyOK(t, orig, Unified, "@@ -3,2 +3,3 @@\n c\n+x\n d\n")
	wantContent(t, res.Content, "a\r\nb\r\nc\nx\nd\n\r\ne\r\n")
	res = applyOK(t, orig, MultiSearchReplace, sr([2]string{"c\n", "C\n"}))
	wantContent(t, res.Content, "a\r\nb\r\nC\r\nd\r\n\r\ne\r\n")
	res = applyOK(t, "a\nb\nc\r\nd\n", MultiSearchReplace, sr([2]string{"a\n", "A\n"}))
	wantContent(t, res.Content, "A\r\nb\r\nc\r\nd\r\n")
}

// A whole file sent under a patch strategy (its own text holding markers) is
// refused, not applied as the few blocks it happens to contain.
func TestPatternWholeFileUnderSearchReplaceIsRefused(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "const line%d = %d;\n", i, i)
	}
	b.WriteString("const diff = `\n<<<<<<< SEARCH\nconst line1 = 1;\n=======\nconst line1 = 2;\n>>>>>>> REPLACE\n`;\n")
	orig := "const line1 = 1;\n"
	_, err := Apply(orig, true, MultiSearchReplace, b.String(), Options{})
	if err == nil || !strings.Contains(err.Error(), "looks like a whole file") {
		t.Fatalf("err = %v, want a refusal naming a whole file", err)
	}
}

// CRLF: a new file whose content uses CRLF keeps CRLF, whichever way it is created.
func TestPatternCRLFNewFileKeepsCRLF(t *testing.T) {
	want := "line one\r\nline two\r\n"
	for name, c := range map[string]struct {
		st   Strategy
		body string
	}{
		"whole file":   {Replace, want},
		"diff":         {Unified, "--- /dev/null\r\n+++ b/new.txt\r\n@@ -0,0 +1,2 @@\r\n+line one\r\n+line two\r\n"},
		"apply_patch":  {ApplyPatch, "*** Begin Patch\r\n*** Add File: new.txt\r\n+line one\r\n+line two\r\n*** End Patch\r\n"},
		"empty SEARCH": {MultiSearchReplace, "<<<<<<< SEARCH\r\n=======\r\nline one\r\nline two\r\n>>>>>>> REPLACE\r\n"},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Apply("", false, c.st, c.body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantContent(t, res.Content, want)
		})
	}
	// Through a whole response: the block's CRLF survives parsing.
	resp, err := Parse("Add it.\r\n\r\n```txt // new.txt\r\nline one\r\nline two\r\n```\r\n\r\n```yaml\r\nprojectId: p\r\nuuid: 5e1a41d8-64a7-4663-a56e-3ebd03f7a1f5\r\n```\r\n")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply("", false, resp.Operations[0].Strategy, resp.Operations[0].Content, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantContent(t, res.Content, want)
}

// Truncated answers: a patch that stops inside a block is refused as cut off,
// whatever its format, and nothing of it is applied.
func TestPatternTruncatedAnswerIsCutOff(t *testing.T) {
	orig := "alpha\nbeta\ngamma\n"
	for name, c := range map[string]struct {
		st   Strategy
		body string
	}{
		"SEARCH/REPLACE without REPLACE marker": {MultiSearchReplace, sr([2]string{"alpha\n", "ALPHA\n"}) + "<<<<<<< SEARCH\nbeta\n=======\nBE"},
		"SEARCH without separator":              {MultiSearchReplace, "<<<<<<< SEARCH\nbeta\n"},
		"edit blocks":                           {EditStrategy, "<<<<<<< SEARCH\nbeta\n=======\n"},
		"apply_patch without End Patch":         {ApplyPatch, "*** Begin Patch\n*** Update File: a\n@@\n-alpha\n+ALPHA\n"},
		"last hunk far shorter than its header": {Unified, "@@ -1,1 +1,1 @@\n-alpha\n+ALPHA\n@@ -2,40 +2,60 @@\n beta\n-gamma\n+GAMMA\n"},
		"hunk of context promising more":        {Unified, "@@ -2,30 +2,40 @@\n beta\n"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Apply(orig, true, c.st, c.body, Options{})
			var ae *ApplyError
			if !errors.As(err, &ae) || !ae.Truncated || !strings.Contains(err.Error(), "the answer looks cut off") {
				t.Fatalf("err = %v, want a cut-off refusal", err)
			}
		})
	}
	// A response whose last file block is never closed is refused whole.
	_, err := Parse("```txt // a.txt\nfull\n```\n```txt // b.txt\nhal")
	var cut *CutOffError
	if !errors.As(err, &cut) {
		t.Fatalf("Parse err = %v, want *CutOffError", err)
	}
	// A bare patch whose own text opens a fence (a README edit) is not an answer cut off.
	if _, err := Parse("<<<<<<< SEARCH\nintro\n=======\nintro\n\n```bash\nmake\n>>>>>>> REPLACE\n"); errors.As(err, &cut) {
		t.Fatalf("a bare patch read as a cut-off answer: %v", err)
	}
	// A miscounted but complete hunk is not cut off.
	if _, err := Apply(orig, true, Unified, "@@ -2,3 +2,4 @@\n beta\n-gamma\n+GAMMA\n", Options{}); err != nil {
		t.Fatalf("miscounted hunk: %v", err)
	}
}

// Edits inside a line: a SEARCH that is part of a line (as Cline and Claude
// Code send) replaces the unique substring; twice is refused; a line range
// picks among equal ones.
func TestPatternEditsInsideALine(t *testing.T) {
	orig := "const a = compute(x, y);\nconst b = 2;\n"
	res := applyOK(t, orig, MultiSearchReplace, sr([2]string{"compute(x, y)\n", "compute(x, y, z)\n"}))
	wantContent(t, res.Content, "const a = compute(x, y, z);\nconst b = 2;\n")
	if _, err := Apply("f(x);\nf(x);\n", true, MultiSearchReplace, sr([2]string{"f(x)\n", "g(x)\n"}), Options{}); err == nil {
		t.Fatal("a substring found twice was replaced")
	}
	res = applyOK(t, "f(x);\nf(x);\n", MultiSearchReplace, "<<<<<<< SEARCH\n:start_line:2\n-------\nf(x)\n=======\ng(x)\n>>>>>>> REPLACE\n")
	wantContent(t, res.Content, "f(x);\ng(x);\n")
}

// Re-indenting after a match that ignored indentation needs evidence: here the
// SEARCH text sits two columns off the file but REPLACE is written at the
// file's own indentation (every changed line lines up with the file's line it
// replaces), so REPLACE is written as it stands. Shifting it, as relay did,
// put the body two columns too shallow.
func TestPatternReindentLiteralWhenReplaceIsInFileFrame(t *testing.T) {
	orig := "func a() {\n    x := 1\n}\n"
	body := sr([2]string{"  func a() {\n      x := 1\n  }\n", "func a() {\n    x := 2\n}\n"})
	res := applyOK(t, orig, MultiSearchReplace, body)
	wantContent(t, res.Content, "func a() {\n    x := 2\n}\n")
}

// The replacement repeats a SEARCH line at SEARCH's indentation (its frame),
// while its changed line lines up with the file's: the evidence disagrees, so
// the block is refused instead of guessed.
func TestPatternReindentRefusedWhenEvidenceDisagrees(t *testing.T) {
	orig := "func a() {\n    x := 1\n}\n"
	body := sr([2]string{"  func a() {\n      x := 1\n  }\n", "  func a() {\n    x := 2\n  }\n"})
	_, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	if err == nil || !strings.Contains(err.Error(), "matched only with indentation ignored") {
		t.Fatalf("err = %v, want a refusal that names the indentation", err)
	}
	_, err = Apply(orig, true, EditStrategy, `{"old_string": "  func a() {\n      x := 1\n  }", "new_string": "  func a() {\n    x := 2\n  }"}`, Options{})
	if err == nil || !strings.Contains(err.Error(), "matched only with indentation ignored") {
		t.Fatalf("edit: err = %v, want a refusal that names the indentation", err)
	}
}

// A whitespace-only line in a replacement is written byte for byte, even when
// the block matched with its indentation ignored and its other lines move.
func TestPatternWhitespaceOnlyReplacementLineKept(t *testing.T) {
	orig := "if a {\n    b()\n}\n"
	res := applyOK(t, orig, MultiSearchReplace, sr([2]string{"if a {\n  b()\n", "if a {\n  b()\n  \n  c()\n"}))
	wantContent(t, res.Content, "if a {\n    b()\n  \n    c()\n}\n")
	res = applyOK(t, "if a {\n    b()\n}\n", Unified, "@@ -1,2 +1,4 @@\n if a {\n-  b()\n+  b2()\n+\t\n+  c()\n")
	wantContent(t, res.Content, "if a {\n    b2()\n\t\n    c()\n}\n")
}

// A new file created from a CRLF new_string keeps CRLF, and later edits of
// it (written with LF, as JSON answers usually are) keep it CRLF.
func TestPatternNewFileFromCRLFNewStringKeepsCRLF(t *testing.T) {
	res, err := Apply("", false, EditStrategy, `[{"old_string": "", "new_string": "a\r\nb\r\n"}, {"old_string": "b\n", "new_string": "c\n"}]`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantContent(t, res.Content, "a\r\nc\r\n")
}

// A numbered hunk whose context occurs more than once after the previous
// hunk is placed only when its line number and its order (the first place
// after the previous hunk) agree: LLMs miscount line numbers, and trusting
// either rule alone applied a hunk at the wrong one of two equal places. (The
// first hunk has no order to check: its number picks, as before.)
func TestPatternNumberedHunkNeedsNumberAndOrderToAgree(t *testing.T) {
	orig := "a\nx\ny\nb\nx\ny\nc\n"
	// After the hunk at line 1, order says the first x y, the number the second.
	_, err := Apply(orig, true, Unified, "@@ -1,1 +1,1 @@\n-a\n+A\n@@ -5,2 +5,2 @@\n x\n-y\n+Y\n", Options{})
	if err == nil || !strings.Contains(err.Error(), "matches 2 places") {
		t.Fatalf("err = %v, want the two places refused", err)
	}
	// A previous hunk past the first x y: both rules pick the second.
	res := applyOK(t, orig, Unified, "@@ -1,1 +1,1 @@\n-a\n+A\n@@ -4,1 +4,1 @@\n-b\n+B\n@@ -5,2 +5,2 @@\n x\n-y\n+Y\n")
	wantContent(t, res.Content, "A\nx\ny\nB\nx\nY\nc\n")
}
