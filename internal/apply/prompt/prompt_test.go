package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"
)

// The replace strategy for TypeScript is exactly the plaintext block of seed 003 (whose
// mis-decoded "‚úÖ" is meant to be "✅"); the complete prompt init prints has every line of it
// and more.
func TestInitMessageMatchesSeed(t *testing.T) {
	matches, _ := filepath.Glob(filepath.Join(corpus.Dir(t, "seeds"), "003_*.txt"))
	if len(matches) == 0 {
		corpus.Skip(t, "seeds")
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	seed := string(data)
	start := strings.Index(seed, "```plaintext\n")
	if start < 0 {
		t.Fatal("seed 003 has no plaintext block")
	}
	seed = seed[start+len("```plaintext\n"):]
	end := strings.Index(seed, "\n```\n\n####")
	if end < 0 {
		t.Fatal("seed 003's plaintext block has no end")
	}
	want := strings.ReplaceAll(seed[:end+1], "‚úÖ", "✅")
	want = strings.ReplaceAll(want, "your-project-name", "demo")
	short, _ := System("demo", "replace", Language("typescript"))
	if got := InitMessage(short); got != want {
		t.Errorf("InitMessage differs from seed 003:\n--- got\n%s\n--- want\n%s", got, want)
	}
	full, _ := System("demo", "auto", Language("typescript"))
	complete := InitMessage(full)
	for _, line := range strings.Split(want, "\n") {
		if !strings.Contains(complete, line) {
			t.Errorf("the complete init message lacks the seed's line %q", line)
		}
	}
	for _, s := range []string{"promptSummary:", "gitCommitMsg:", "Strategy new-unified", "Strategy multi-search-replace"} {
		if !strings.Contains(complete, s) {
			t.Errorf("the complete init message lacks %q", s)
		}
	}
}

// Code fences and example paths follow the project's language; the project id is never
// taken for a placeholder.
func TestSystemLanguage(t *testing.T) {
	for _, tt := range []struct {
		lang      string
		want, not []string
	}{
		{"go", []string{"```go // {filePath}\n", "```go // internal/config/config.go multi-search-replace", "- edit: main.go"}, []string{"```typescript", ".ts"}},
		{"javascript", []string{"```javascript // {filePath}\n", "- new: src/components/Button.jsx"}, []string{"```typescript"}},
		{"python", []string{"```python // \"src/my package/module.py\" new-unified"}, []string{"```typescript"}},
		{"cobol", []string{"```typescript // {filePath}\n"}, nil},
	} {
		got, err := System("{lang}", "auto", Language(tt.lang))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tt.want {
			if !strings.Contains(got, s) {
				t.Errorf("%s: prompt lacks %q", tt.lang, s)
			}
		}
		for _, s := range tt.not {
			if strings.Contains(got, s) {
				t.Errorf("%s: prompt has %q", tt.lang, s)
			}
		}
		if !strings.Contains(got, "projectId: {lang}\n") {
			t.Errorf("%s: the project id was rewritten", tt.lang)
		}
	}
}

func TestSystemStrategies(t *testing.T) {
	tests := []struct {
		strategy    string
		contains    []string
		notContains []string
	}{
		{"replace", []string{"projectId: p1", "Code changes rules 1-6:"}, []string{"new-unified", "SEARCH", "gitCommitMsg"}},
		{"auto", []string{"projectId: p1", "Strategy new-unified", "Strategy multi-search-replace", "rename-file", "gitCommitMsg:", "promptSummary:"}, nil},
		{"", []string{"Strategy new-unified", "Strategy multi-search-replace"}, nil},
		{"new-unified", []string{"Strategy new-unified", "@@ ... @@"}, []string{"Strategy multi-search-replace"}},
		{"multi-search-replace", []string{"<<<<<<< SEARCH", ">>>>>>> REPLACE"}, []string{"Strategy new-unified"}},
		{"edit", []string{"Strategy edit", `"old_string"`, "replace_all"}, []string{"Strategy new-unified", "<<<<<<< SEARCH"}},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			got, err := System("p1", tt.strategy, Language("typescript"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("prompt lacks %q", s)
				}
			}
			for _, s := range tt.notContains {
				if strings.Contains(got, s) {
					t.Errorf("prompt has %q", s)
				}
			}
		})
	}
	if _, err := System("p1", "bogus", Language("go")); err == nil {
		t.Error("unknown strategy accepted")
	}
}
