package ftsquery

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

func TestTSQuery(t *testing.T) {
	for q, want := range map[string]string{
		"deploy":                     "'deploy'",
		"Deploy Canary":              "'deploy' & 'canary'",
		`"migration step" failed`:    "('migration' <-> 'step') & 'failed'",
		"compil*":                    "'compil':*",
		"ru*":                        "'ru'",
		"runbook OR tests":           "'runbook' | 'tests'",
		"a b OR c":                   "'a' & 'b' | 'c'",
		"OR a OR OR b OR":            "'a' | 'b'",
		"crème brûlée":               "'creme' & 'brulee'",
		"github.com/relaydev":        "('github' <-> 'com' <-> 'relaydev')",
		`it's ) ( : & | ! <-> 'x':*`: "('it' <-> 's') & 'x'",
		`"unterminated phrase`:       "('unterminated' <-> 'phrase')",
	} {
		terms, err := Parse(q)
		if err != nil {
			t.Fatalf("Parse(%q): %v", q, err)
		}
		if got := TSQuery(terms); got != want {
			t.Errorf("TSQuery(%q) = %s, want %s", q, got, want)
		}
	}
	for _, q := range []string{"", "   ", `"" * OR`, "!!! ???", strings.Repeat("a", MaxQueryLen+1)} {
		if _, err := Parse(q); err == nil {
			t.Errorf("Parse(%q) accepted a query with no words", q)
		} else if len(q) <= MaxQueryLen && !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("Parse(%q): %v", q, err)
		}
	}
}

func TestIndexText(t *testing.T) {
	if got := IndexText("See https://github.com/relaydev/relay — Café!", 1000); got != "see https github com relaydev relay cafe" {
		t.Fatalf("IndexText = %q", got)
	}
	if got := IndexText("alpha beta gamma", 11); got != "alpha beta" {
		t.Fatalf("bounded IndexText = %q", got)
	}
}

// Whatever the input, the tsquery holds only quoted letter/digit words and operators, so
// it can never be a tsquery syntax error or inject one.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a b", `"x y" z*`, "a OR b", `'x':* & !y <-> (z)`, "é\u0301", "OR"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms, err := Parse(q)
		if err != nil {
			return
		}
		out := TSQuery(terms)
		rest := out
		for rest != "" {
			switch {
			case strings.HasPrefix(rest, "'"):
				end := strings.IndexByte(rest[1:], '\'')
				if end <= 0 {
					t.Fatalf("TSQuery(%q) = %s: empty or unterminated word", q, out)
				}
				for _, r := range rest[1 : 1+end] {
					if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
						t.Fatalf("TSQuery(%q) = %s: %q inside a word", q, out, r)
					}
				}
				rest = strings.TrimPrefix(rest[2+end:], ":*")
			case strings.HasPrefix(rest, " & "), strings.HasPrefix(rest, " | "):
				rest = rest[3:]
			case strings.HasPrefix(rest, " <-> "):
				rest = rest[5:]
			case rest[0] == '(' || rest[0] == ')':
				rest = rest[1:]
			default:
				t.Fatalf("TSQuery(%q) = %s: unexpected %q", q, out, rest)
			}
		}
	})
}

func BenchmarkIndexText100KB(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog near the cafe; see https://example.com/a_b. ", 1200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		IndexText(text, 512<<10)
	}
}
