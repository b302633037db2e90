package tokens

import (
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// pieces splits s with next.
func pieces(s string, next func(string, int) int) []string {
	var out []string
	for i := 0; i < len(s); {
		end := next(s, i)
		out = append(out, s[i:end])
		i = end
	}
	return out
}

// regexpPieces splits s with the pattern itself, as tiktoken-go did.
func regexpPieces(t *testing.T, re *regexp2.Regexp, s string) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzSplit: both encodings' splitters cut any valid UTF-8 text where their patterns do.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"Hello, World! It's 2026: naïve CAFÉ'S ÀB̈c 中文abc ＡＢＣ",
		"a\u0301b \u0301x ABC\u0301def \u02b0\u02b0 x'LL y'Re",
		"  \t\n \r\n\n  x  \n/ !!\n/ ?//\r\n 123456 ٣٤٥٦ ½⅓ Ⅻ",
		"'s'S'T 're'VE 'm'd'll'x ' '", "_ABC _abc __init__ foo.bar(baz)",
		"\u00a0\u2003word\u3000word\u0085x\u2028y", "emoji 🚀🔥 👨‍👩‍👧 🏽",
	} {
		f.Add(s)
	}
	res := map[string]*regexp2.Regexp{}
	for name, enc := range encodings {
		res[name] = regexp2.MustCompile(enc.pattern, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for name, enc := range encodings {
			if got, want := pieces(s, enc.next), regexpPieces(t, res[name], s); !slices.Equal(got, want) {
				t.Fatalf("%s splits %q into %q, its pattern into %q", name, s, got, want)
			}
		}
	})
}
