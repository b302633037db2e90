package patch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// srcGen makes random source files: mostly unique lines (identifiers and
// numbers), some repeated ones ("}", blank, "return nil"), tabs or spaces.
type srcGen struct {
	r    *rand.Rand
	tabs bool
	n    int // counter that keeps generated lines unique
}

var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}

func (g *srcGen) word() string { return words[g.r.IntN(len(words))] }

func (g *srcGen) indent(depth int) string {
	if g.tabs {
		return strings.Repeat("\t", depth)
	}
	return strings.Repeat("    ", depth)
}

func (g *srcGen) line(depth int) string {
	g.n++
	ind := g.indent(depth)
	switch k := g.r.IntN(20); {
	case k == 0:
		return ""
	case k == 1:
		return ind + "}"
	case k == 2:
		return ind + "return nil"
	case k < 8:
		return fmt.Sprintf("%s%s%d := %s(%s, %d)", ind, g.word(), g.n, g.word(), g.word(), g.r.IntN(1000))
	case k < 12:
		return fmt.Sprintf("%sif %s%d > %d {", ind, g.word(), g.n, g.r.IntN(100))
	case k < 16:
		return fmt.Sprintf("%s// %s %s %s step %d", ind, g.word(), g.word(), g.word(), g.n)
	default:
		return fmt.Sprintf("%s%s.%s(%q, %d)", ind, g.word(), g.word(), g.word(), g.n)
	}
}

func (g *srcGen) lines(n, depth int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.line(depth)
		if g.r.IntN(4) == 0 {
			depth = max(0, min(4, depth+g.r.IntN(3)-1))
		}
	}
	return out
}

// region is one edit: file lines [start, start+n) become new.
type region struct {
	start, n int
	new      []string
}

type fixture struct {
	orig, want []string
	regions    []region
	g          *srcGen
}

func newFixture(seed uint64) *fixture {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &srcGen{r: r, tabs: r.IntN(2) == 0}
	orig := g.lines(30+r.IntN(150), 1)
	f := &fixture{orig: orig, g: g}
	// Up to three regions, at least 10 lines apart so hunks stay separate.
	at := 3 + r.IntN(10)
	for k := 0; k < 1+r.IntN(3) && at < len(orig)-5; k++ {
		n := r.IntN(4)
		if at+n > len(orig) {
			break
		}
		m := r.IntN(4)
		if n == 0 && m == 0 {
			m = 1
		}
		depth := 1
		if n > 0 {
			depth = len(leadingWS(orig[at])) / max(1, len(g.indent(1)))
		}
		f.regions = append(f.regions, region{start: at, n: n, new: g.lines(m, depth)})
		at += n + 10 + r.IntN(20)
	}
	prev := 0
	for _, rg := range f.regions {
		f.want = append(f.want, orig[prev:rg.start]...)
		f.want = append(f.want, rg.new...)
		prev = rg.start + rg.n
	}
	f.want = append(f.want, orig[prev:]...)
	return f
}

func text(ls []string) string { return joinLines(ls) }

// uniqueAt reports whether pat occurs (ignoring indentation) only at start.
func uniqueAt(file, pat []string, start int) bool {
	if len(pat) == 0 || allBlank(pat) {
		return false
	}
	count := 0
	for s := 0; s+len(pat) <= len(file); s++ {
		ok := true
		for i := range pat {
			if strings.TrimSpace(file[s+i]) != strings.TrimSpace(pat[i]) {
				ok = false
				break
			}
		}
		if ok {
			count++
			if s != start {
				return false
			}
		}
	}
	return count == 1
}

// context returns how many lines before and after a region make its search text unique.
func (f *fixture) context(rg region, min0 int) (int, int, bool) {
	for c := min0; c <= 8; c++ {
		a := min(c, rg.start)
		b := min(c, len(f.orig)-rg.start-rg.n)
		if uniqueAt(f.orig, f.orig[rg.start-a:rg.start+rg.n+b], rg.start-a) {
			return a, b, true
		}
	}
	return 0, 0, false
}

// damage is how an LLM garbles whitespace; it is applied to a block's lines.
type damage int

const (
	dmgNone damage = iota
	dmgTrailing
	dmgReindent // shift the whole block (and convert tabs to spaces)
	dmgCount
)

func applyDamage(d damage, ls []string, r *rand.Rand, tabs bool) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		switch d {
		case dmgTrailing:
			if i%2 == 0 && l != "" {
				l += "  "
			}
		case dmgReindent:
			ind := leadingWS(l)
			// Empty lines stay empty: a whitespace-only line the answer writes is
			// written as it stands, so the oracle could not expect it moved.
			if tabs {
				l = strings.Repeat("  ", strings.Count(ind, "\t")) + l[len(ind):]
			} else if l != "" {
				l = "  " + l
			}
		}
		out[i] = l
	}
	return out
}

func (f *fixture) msrPatch(dmg damage) (string, bool) {
	var b strings.Builder
	r := f.g.r
	for _, rg := range f.regions {
		a, c, ok := f.context(rg, r.IntN(3))
		if !ok {
			return "", false
		}
		search := f.orig[rg.start-a : rg.start+rg.n+c]
		var repl []string
		repl = append(repl, f.orig[rg.start-a:rg.start]...)
		repl = append(repl, rg.new...)
		repl = append(repl, f.orig[rg.start+rg.n:rg.start+rg.n+c]...)
		if dmg == dmgReindent && !f.g.tabs {
			// Spaces: the LLM indented everything two columns more.
		}
		if dmg == dmgReindent && allFlush(search) {
			dmg = dmgNone // the LLM's whitespace habits show only in indented lines
		}
		search = applyDamage(dmg, search, r, f.g.tabs)
		if dmg == dmgTrailing {
			// Context copied into REPLACE carries the same damage as in SEARCH.
			repl = append(append(append([]string(nil), search[:a]...), rg.new...), search[a+rg.n:]...)
		} else {
			repl = applyDamage(dmg, repl, r, f.g.tabs)
		}
		b.WriteString("<<<<<<< SEARCH\n" + text(search) + "=======\n" + text(repl) + ">>>>>>> REPLACE\n")
	}
	return b.String(), true
}

// hunks builds unified-diff hunks with 3 lines of context, optional line
// drift and an optional dropped context line next to the change.
func (f *fixture) hunks(numbers bool, drift int, drop bool, dmg damage) (string, bool) {
	var b strings.Builder
	r := f.g.r
	delta := 0
	for _, rg := range f.regions {
		a := min(3, rg.start)
		c := min(3, len(f.orig)-rg.start-rg.n)
		pre := append([]string(nil), f.orig[rg.start-a:rg.start]...)
		post := append([]string(nil), f.orig[rg.start+rg.n:rg.start+rg.n+c]...)
		if !uniqueAt(f.orig, f.orig[rg.start-a:rg.start+rg.n+c], rg.start-a) {
			return "", false
		}
		// Drop a context line next to the change (the second one for a pure
		// insertion, whose place would otherwise be ambiguous); the rest must
		// still pin the hunk down.
		k := 0
		if rg.n == 0 {
			k = 1
		}
		if drop && a >= 2+k && r.IntN(2) == 0 {
			if !uniqueAt(f.orig, f.orig[rg.start-k:rg.start+rg.n+c], rg.start-k) {
				return "", false
			}
			pre = append(pre[:len(pre)-1-k], pre[len(pre)-k:]...)
		} else if drop && c >= 2+k {
			if !uniqueAt(f.orig, f.orig[rg.start-a:rg.start+rg.n+k], rg.start-a) {
				return "", false
			}
			post = append(post[:k], post[k+1:]...)
		}
		pre = applyDamage(dmg, pre, r, f.g.tabs)
		post = applyDamage(dmg, post, r, f.g.tabs)
		oldN := len(pre) + rg.n + len(post)
		newN := len(pre) + len(rg.new) + len(post)
		if numbers {
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", rg.start-a+1+drift, oldN, rg.start-a+1+drift+delta, newN)
		} else {
			b.WriteString("@@ ... @@\n")
		}
		for _, l := range pre {
			b.WriteString(" " + l + "\n")
		}
		for _, l := range f.orig[rg.start : rg.start+rg.n] {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range rg.new {
			b.WriteString("+" + l + "\n")
		}
		for _, l := range post {
			b.WriteString(" " + l + "\n")
		}
		delta += len(rg.new) - rg.n
	}
	return b.String(), true
}

func (f *fixture) applyPatchSection(dmg damage) (string, bool) {
	var b strings.Builder
	r := f.g.r
	for _, rg := range f.regions {
		a, c, ok := f.context(rg, 1+r.IntN(3))
		if !ok {
			return "", false
		}
		// Anchor on a unique line above the chunk, as codex does with a function signature.
		anchor := ""
		for i := rg.start - a - 1; i >= 0 && i >= rg.start-a-6; i-- {
			if !isBlank(f.orig[i]) && uniqueAt(f.orig, f.orig[i:i+1], i) {
				anchor = strings.TrimSpace(f.orig[i])
				break
			}
		}
		b.WriteString(strings.TrimSpace("@@ "+anchor) + "\n")
		for _, l := range applyDamage(dmg, f.orig[rg.start-a:rg.start], r, f.g.tabs) {
			b.WriteString(" " + l + "\n")
		}
		for _, l := range f.orig[rg.start : rg.start+rg.n] {
			b.WriteString("-" + l + "\n")
		}
		for _, l := range rg.new {
			b.WriteString("+" + l + "\n")
		}
		for _, l := range applyDamage(dmg, f.orig[rg.start+rg.n:rg.start+rg.n+c], r, f.g.tabs) {
			b.WriteString(" " + l + "\n")
		}
	}
	return b.String(), true
}

// TestPropertyRoundTrip: random files and edits, written in every format with
// drift, whitespace damage and dropped context, apply back to the edited file.
func TestPropertyRoundTrip(t *testing.T) {
	const n = 400
	type gen func(f *fixture, seed uint64) (Strategy, string, bool)
	formats := map[string]gen{
		"multi-search-replace": func(f *fixture, seed uint64) (Strategy, string, bool) {
			p, ok := f.msrPatch(damage(seed % uint64(dmgCount)))
			return MultiSearchReplace, p, ok
		},
		"unified": func(f *fixture, seed uint64) (Strategy, string, bool) {
			p, ok := f.hunks(true, int(seed%11)-5, seed%3 == 0, damage(seed%2)) // trailing damage only
			return Unified, p, ok
		},
		"new-unified": func(f *fixture, seed uint64) (Strategy, string, bool) {
			p, ok := f.hunks(false, 0, seed%3 == 0, damage(seed%2))
			return NewUnified, p, ok
		},
		"apply-patch": func(f *fixture, seed uint64) (Strategy, string, bool) {
			p, ok := f.applyPatchSection(damage(seed % 2))
			return ApplyPatch, p, ok
		},
	}
	for name, mk := range formats {
		t.Run(name, func(t *testing.T) {
			tried, fails, guesses := 0, 0, 0
			for seed := uint64(1); seed <= n; seed++ {
				f := newFixture(seed)
				if len(f.regions) == 0 {
					continue
				}
				st, p, ok := mk(f, seed)
				if !ok {
					continue
				}
				tried++
				res, err := Apply(text(f.orig), true, st, p, Options{})
				if err != nil && strings.Contains(err.Error(), "matched only with indentation ignored") {
					// Nothing in the block says which indentation its new lines are
					// in; refusing is right, the oracle knows only its damage model.
					guesses++
					continue
				}
				if err != nil {
					fails++
					if fails <= 3 {
						t.Errorf("seed %d: %v\npatch:\n%s", seed, err, p)
					}
					continue
				}
				if res.Content != text(f.want) {
					fails++
					if fails <= 3 {
						t.Errorf("seed %d: wrong result\npatch:\n%s\n%s", seed, p, lineDiff(res.Content, text(f.want)))
					}
					continue
				}
				// The same patch again is reported, never applied twice.
				if _, err := Apply(res.Content, true, st, p, Options{}); err == nil {
					fails++
					if fails <= 3 {
						t.Errorf("seed %d: second application succeeded\npatch:\n%s", seed, p)
					}
				}
			}
			if tried < n/2 {
				t.Errorf("only %d of %d seeds produced a patch", tried, n)
			}
			t.Logf("%s: %d patches, %d failures, %d refused as an indentation guess", name, tried, fails, guesses)
			if guesses*100 > tried*2 {
				t.Errorf("%d of %d patches refused as an indentation guess; at most 2%% expected", guesses, tried)
			}
		})
	}
}

// TestPropertyOtherFile: a patch made for one file never applies to another,
// including a copy whose identifiers and numbers were rewritten.
func TestPropertyOtherFile(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		f := newFixture(seed)
		if len(f.regions) == 0 || f.regions[0].n == 0 {
			continue
		}
		p, ok := f.msrPatch(dmgNone)
		if !ok {
			continue
		}
		h, _ := f.hunks(true, 0, false, dmgNone)
		ap, _ := f.applyPatchSection(dmgNone)
		other := newFixture(seed + 100000)
		renamed := make([]string, len(f.orig))
		for i, l := range f.orig {
			renamed[i] = renameTokens(l)
		}
		for _, target := range [][]string{other.orig, renamed} {
			for _, c := range []struct {
				st Strategy
				p  string
			}{{MultiSearchReplace, p}, {Unified, h}, {NewUnified, h}, {ApplyPatch, ap}} {
				if c.p == "" {
					continue
				}
				_, err := Apply(text(target), true, c.st, c.p, Options{})
				var ae *ApplyError
				if err == nil {
					t.Fatalf("seed %d: %s patch for another file applied\npatch:\n%s\nfile:\n%s", seed, c.st, c.p, text(target))
				}
				if !errors.As(err, &ae) {
					t.Fatalf("seed %d: error is %T, want *ApplyError", seed, err)
				}
			}
		}
	}
}

// renameTokens rewrites every identifier of 4+ letters and every number, keeping the layout.
func renameTokens(l string) string {
	var b strings.Builder
	for _, tk := range tokensWithSpace(l) {
		switch {
		case tk.kind == tkNum:
			b.WriteString(tk.s + "7")
		case tk.kind == tkWord && len(tk.s) >= 4:
			b.WriteString("zq" + tk.s[2:] + "x")
		default:
			b.WriteString(tk.s)
		}
	}
	return b.String()
}

// tokensWithSpace is tokens() but keeps whitespace runs as punctuation tokens.
func tokensWithSpace(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		if s[i] == ' ' || s[i] == '\t' {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			out = append(out, token{s[i:j], tkPunct})
			i = j
			continue
		}
		t := tokens(s[i:])
		if len(t) == 0 {
			break
		}
		out = append(out, t[0])
		i += len(t[0].s)
	}
	return out
}

// lineDiff shows the lines where got and want differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, c string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			c = w[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n  got  %q\n  want %q\n", i+1, a, c)
		}
	}
	return b.String()
}

func allFlush(ls []string) bool {
	for _, l := range ls {
		if leadingWS(l) != "" {
			return false
		}
	}
	return true
}
