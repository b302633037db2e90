package lint

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name           string
		stdout, stderr string
		exit           int
		want           int
	}{
		{"exit 0 ignores output", "Found 3 errors.", "", 0, 0},
		{"tsc plural", "src/a.ts:1:1 - error TS1: x\n\nFound 3 errors in 2 files.\n", "", 2, 3},
		{"tsc singular", "Found 1 error in src/a.ts:3\n", "", 2, 1},
		{"tsc non-pretty", "src/a.ts(3,5): error TS2322: bad\nsrc/b.ts(1,1): error TS1005: x\n", "", 2, 2},
		{"eslint", "/x/a.js\n  1:1  error  no\n\n✖ 5 problems (3 errors, 2 warnings)\n", "", 1, 3},
		{"eslint warnings only but failed", "✖ 2 problems (0 errors, 2 warnings)\n", "", 1, 1},
		{"generic error(s)", "", "build: 4 error(s)\n", 1, 4},
		{"generic on stderr", "", "7 errors generated.\n", 1, 7},
		{"go vet locations", "", "# p\n./a.go:3:2: unreachable code\n./b.go:10:5: printf mismatch\n", 1, 2},
		{"gcc skips warnings and notes", "", "a.c:1:2: error: x\na.c:2:3: warning: y\na.c:3:4: note: z\na.c:5:1: error: w\n", 1, 2},
		{"ruff", "a.py:1:8: F401 unused\nb.py:2:1: E402 late\nFound 2 errors.\n", "", 1, 2},
		{"ruff without summary", "a.py:1:8: F401 unused\nb.py:2:1: E402 late\nc.py:3:3: E1 x\n", "", 1, 3},
		{"unparsable failure", "something broke\n", "", 1, 1},
		{"empty failure", "", "", 127, 1},
		{"last summary wins", "Found 9 errors.\n...\nFound 2 errors.\n", "", 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Count(tc.stdout, tc.stderr, tc.exit); got != tc.want {
				t.Errorf("Count(%q, %q, %d) = %d, want %d", tc.stdout, tc.stderr, tc.exit, got, tc.want)
			}
		})
	}
}

func FuzzCount(f *testing.F) {
	f.Add("Found 3 errors.", "", 1)
	f.Add("a.go:1:2: x", "✖ 1 problem (1 error, 0 warnings)", 2)
	f.Add("", "", 0)
	f.Fuzz(func(t *testing.T, stdout, stderr string, exit int) {
		n := Count(stdout, stderr, exit)
		if exit == 0 && n != 0 {
			t.Fatalf("exit 0 gave %d errors", n)
		}
		if exit != 0 && n < 1 {
			t.Fatalf("failed run gave %d errors", n)
		}
	})
}

// TestDiagnostics: the error lines a person reads before approving, without warnings,
// repeats or terminal control characters; a failure without such lines gives its last line.
func TestDiagnostics(t *testing.T) {
	out := "a.go:3:2: undefined: x\na.go:3:2: undefined: x\nb.c:1:1: warning: unused\n./c.go:9: missing return\nsrc/a.ts(3,5): error TS2322: bad\x1b[31m\n"
	got := Diagnostics(out, "", 1)
	want := []string{"a.go:3:2: undefined: x", "./c.go:9: missing return", "src/a.ts(3,5): error TS2322: bad?[31m"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Diagnostics = %q, want %q", got, want)
	}
	if got := Diagnostics("", "something broke\n\n", 2); len(got) != 1 || got[0] != "something broke" {
		t.Errorf("no diagnostic lines: %q", got)
	}
	if got := Diagnostics("a.go:1:1: x", "", 0); got != nil {
		t.Errorf("exit 0: %q", got)
	}
}
