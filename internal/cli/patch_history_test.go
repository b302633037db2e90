package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/testsupport/corpus"
)

// TestPatchHistoryCorpus runs `relay patch --strategy S FILE PATCH` in-process on
// every real LLM patch of the history corpus (../shared/corpus/patch/history-dev)
// whose committed file the shipped engine reproduced: the command (which also
// reads whole responses and fenced patches) must reproduce it too.
func TestPatchHistoryCorpus(t *testing.T) {
	root := corpus.Dir(t, "corpus/patch")
	metas, _ := filepath.Glob(filepath.Join(root, "history-dev", "*", "*", "meta.json"))
	if len(metas) == 0 {
		t.Skip("no history-dev corpus")
	}
	name := regexp.MustCompile(`^patch\.(\d+)\.(.+)$`)
	for _, mp := range metas {
		dir := filepath.Dir(mp)
		var meta struct {
			Shipped string `json:"shipped_engine"`
		}
		b, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Shipped != "exact" {
			continue
		}
		ents, _ := os.ReadDir(dir)
		type step struct {
			n        int
			strategy string
			path     string
		}
		var steps []step
		for _, e := range ents {
			if m := name.FindStringSubmatch(e.Name()); m != nil {
				n := 0
				for _, c := range m[1] {
					n = n*10 + int(c-'0')
				}
				steps = append(steps, step{n, m[2], filepath.Join(dir, e.Name())})
			}
		}
		sort.Slice(steps, func(a, b int) bool { return steps[a].n < steps[b].n })
		id, _ := filepath.Rel(root, dir)
		t.Run(id, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "file")
			in, err := os.ReadFile(filepath.Join(dir, "input"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(work, in, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				ios, _, _, errOut := iostreams.Test()
				err := patchRun(&PatchOptions{IO: ios, File: work, PatchPath: s.path, Strategy: s.strategy, Write: true})
				if err != nil {
					t.Fatalf("relay patch --strategy %s: %v\n%s", s.strategy, err, errOut.String())
				}
			}
			got, _ := os.ReadFile(work)
			want, err := os.ReadFile(filepath.Join(dir, "expected"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("relay patch does not reproduce the committed file")
			}
		})
	}
}
