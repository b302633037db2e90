package realtext

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFilesConcatenatesInNameOrder(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"b.go": "second ", "a.go": "first ", "c.md": "not matched"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(Files(t, filepath.Join(dir, "*.go"), 5)); got != "first second " {
		t.Fatalf("Files = %q, want the .go files in name order", got)
	}
}

func TestTermsSkipTheCommonest(t *testing.T) {
	var b strings.Builder
	// word i appears 3000-i times: the 50 commonest are skipped, the next 2,000 kept in order
	for i := range 2100 {
		w := fmt.Sprintf("w%s", strings.Repeat("x", 3)+letters(i))
		b.WriteString(strings.Repeat(w+" ", 3000-i))
	}
	b.WriteString("abc toolongtobeaquerywordatall 12345 ")
	got := Terms(b.String())
	if len(got) != 2000 || got[0] != "wxxx"+letters(50) || got[1999] != "wxxx"+letters(2049) {
		t.Fatalf("terms: %d, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
	for _, w := range got {
		if w == "abc" || strings.HasPrefix(w, "toolong") {
			t.Fatalf("a word under 4 or over 20 letters was kept: %q", w)
		}
	}
}

// letters spells i in base 26 with a-z (digits are not letters, so they would split words).
func letters(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i /= 26
		if i == 0 {
			return s
		}
	}
}
