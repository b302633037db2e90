package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitMessageMatchesSeed compares InitMessage with the plaintext block of
// seed 003, whose mis-decoded "‚úÖ" is meant to be "✅".
func TestInitMessageMatchesSeed(t *testing.T) {
	matches, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "seeds", "003_*.txt"))
	if len(matches) == 0 {
		t.Skip("seed 003 not found beside the repository (../shared/seeds)")
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
	if got := InitMessage("demo"); got != want {
		t.Errorf("InitMessage differs from seed 003:\n--- got\n%s\n--- want\n%s", got, want)
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
			got, err := System("p1", tt.strategy)
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
	if _, err := System("p1", "bogus"); err == nil {
		t.Error("unknown strategy accepted")
	}
}
