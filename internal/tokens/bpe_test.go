package tokens

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// reference is tiktoken-go, the library these counts replaced: every count must be its.
func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	t.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TestCountsMatchTiktoken counts slices of this repository's code and docs, and text in
// other scripts, with both encodings, against tiktoken-go.
func TestCountsMatchTiktoken(t *testing.T) {
	text := realtext.ModuleText(t)
	samples := []string{
		"Grüße aus München — naïve café, déjà vu; ÆØÅ æøå",
		"日本語のテキストとカタカナ、漢字。中文文本，韩国어 텍스트",
		"Русский текст с цифрами 12345 и пунктуацией!!! ¿Qué?",
		"emoji 🚀🔥👍🏽 and ZWJ 👨‍👩‍👧 sequences <|endoftext|> <|fim_prefix|>",
		"   \t\n\n  trailing spaces   \r\n\r\nwindows\r\nlines   ",
		"'s 't 're 've 'm 'll 'd 'S 'T 'RE I'M YOU'LL",
		strings.Repeat("a", 3000), strings.Repeat("ab1 ", 500), strings.Repeat("🙂", 400),
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 400 {
		off := rng.IntN(len(text) - 4096)
		samples = append(samples, strings.ToValidUTF8(text[off:off+1+rng.IntN(4096)], ""))
	}
	for _, name := range []string{O200k, CL100k} {
		ref := reference(t, name)
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples {
			if got, want := c.CountString(s), len(ref.EncodeOrdinary(s)); got != want {
				t.Fatalf("%s: %d tokens, tiktoken-go %d, for %q", name, got, want, s)
			}
		}
	}
}

// FuzzCount: any valid UTF-8 counts as tiktoken-go counts it.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"hello world", "a  b\n\n c", "x'S'll", "🙂🙂 12345678", "\u00e9\u0301", "<|endoftext|>"} {
		f.Add(s)
	}
	ref := reference(f, O200k)
	c, err := New(O200k)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got, want := c.CountString(s), len(ref.EncodeOrdinary(s)); got != want {
			t.Fatalf("%d tokens, tiktoken-go %d, for %q", got, want, s)
		}
	})
}

// TestResident: what an encoding keeps stays within what Resident tells the memory limit.
func TestResident(t *testing.T) {
	for _, name := range []string{O200k, CL100k} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := loadVocab(name)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%s keeps %.1f MB", name, float64(kept)/(1<<20))
		if kept > Resident(name) {
			t.Errorf("%s keeps %d bytes, more than Resident's %d", name, kept, Resident(name))
		}
		runtime.KeepAlive(v)
	}
}

// TestParseVocab: a vocabulary's ranks are its line numbers; a file where they are not, or
// with a line that is not "base64 rank", is refused rather than read into wrong counts.
func TestParseVocab(t *testing.T) {
	v, err := parseVocab([]byte("YQ== 0\nYg== 1\nYWI= 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]uint32{"a": 0, "b": 1, "ab": 2} {
		if r, ok := v.lookup(tok); !ok || r != want {
			t.Errorf("lookup(%q) = %d, %v; want %d", tok, r, ok, want)
		}
	}
	if _, ok := v.lookup("ba"); ok {
		t.Error(`lookup("ba") found a token the file does not have`)
	}
	for _, bad := range []string{"YQ== 0\nYg== 2\n", "YQ== 1\n", "YQ==0\n", "Y!== 0\n", "YQ== x\n"} {
		if _, err := parseVocab([]byte(bad)); err == nil {
			t.Errorf("parseVocab(%q): no error", bad)
		}
	}
}
