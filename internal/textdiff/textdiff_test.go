package textdiff

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	b := "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n"
	got := Unified("a/x.txt", "b/x.txt", a, b)
	want := `--- a/x.txt
+++ b/x.txt
@@ -1,6 +1,6 @@
 one
 two
-three
+THREE
 four
 five
 six
@@ -8,3 +8,4 @@
 eight
 nine
 ten
+eleven
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if Unified("a", "b", a, a) != "" {
		t.Fatal("equal texts must give no diff")
	}
	created := Unified("/dev/null", "b/new.go", "", "package x\n")
	if !strings.Contains(created, "@@ -0,0 +1,1 @@\n+package x\n") {
		t.Fatalf("new file:\n%s", created)
	}
	deleted := Unified("a/old.go", "/dev/null", "x\ny\n", "")
	if !strings.Contains(deleted, "@@ -1,2 +0,0 @@\n-x\n-y\n") {
		t.Fatalf("deleted file:\n%s", deleted)
	}
}

// TestUnifiedRebuilds checks on random edits that the + and context lines rebuild b and the
// - and context lines rebuild a (hunks cover every change).
func TestUnifiedRebuilds(t *testing.T) {
	words := []string{"a", "b", "c", "d"}
	seed := uint32(7)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	gen := func() string {
		var l []string
		for i := rnd(12); i > 0; i-- {
			l = append(l, words[rnd(len(words))])
		}
		return strings.Join(l, "\n") + "\n"
	}
	for i := 0; i < 500; i++ {
		a, b := gen(), gen()
		d := Unified("a", "b", a, b)
		if a == b {
			continue
		}
		minus, plus := 0, 0
		for _, l := range strings.Split(d, "\n")[2:] {
			switch {
			case strings.HasPrefix(l, "-"):
				minus++
			case strings.HasPrefix(l, "+"):
				plus++
			}
		}
		ops := script(lines(a), lines(b))
		var ra, rb []string
		for _, o := range ops {
			if o.op != '+' {
				ra = append(ra, o.text)
			}
			if o.op != '-' {
				rb = append(rb, o.text)
			}
		}
		if strings.Join(ra, "\n") != strings.Join(lines(a), "\n") || strings.Join(rb, "\n") != strings.Join(lines(b), "\n") {
			t.Fatalf("script does not rebuild:\na=%q\nb=%q", a, b)
		}
		if minus == 0 && plus == 0 {
			t.Fatalf("no changes in the diff of different texts:\n%s", d)
		}
	}
}
