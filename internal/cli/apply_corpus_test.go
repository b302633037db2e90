package cli

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testcorpus"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// TestApplyRelaycodeE2ECorpus runs `relay apply -y` on every relaycode end-to-end case
// (../shared/corpus/patch/relaycode-e2e): expected tree on success, unchanged tree on failure.
func TestApplyRelaycodeE2ECorpus(t *testing.T) {
	corpus := findCorpus()
	if corpus == "" {
		testcorpus.Skip(t, "corpus")
	}
	root := filepath.Join(corpus, "patch", "relaycode-e2e")
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, c := range cases {
		if !c.IsDir() || strings.HasPrefix(c.Name(), "_") {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			src := filepath.Join(root, c.Name())
			var meta struct {
				Outcome      string   `json:"expected_outcome"`
				MustNotExist []string `json:"must_not_exist"`
			}
			b, err := os.ReadFile(filepath.Join(src, "meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			if err := os.CopyFS(work, os.DirFS(filepath.Join(src, "initial"))); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			before := corpusHash(t, work)
			cfg := config.Default("test-project")
			cfg.Dir = work
			cfg.Core.EnableNotifications = false
			ios, _, _, errOut := iostreams.Test()
			err = applyRun(context.Background(), &ApplyOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil },
				File: filepath.Join(src, "response.md"), Yes: true})
			if meta.Outcome == "failure" {
				if err == nil {
					t.Fatalf("applied; want failure")
				}
				if corpusHash(t, work) != before {
					t.Errorf("tree changed on failure (%v)", err)
				}
			} else {
				if err != nil {
					t.Fatalf("relay apply: %v\n%s", err, errOut)
				}
				want := filepath.Join(src, "expected")
				_ = filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					rel, _ := filepath.Rel(want, p)
					w, _ := os.ReadFile(p)
					g, err := os.ReadFile(filepath.Join(work, rel))
					// relay ends whole files with a newline; relaycode trimmed it.
					if err != nil || string(g) != string(w) && string(g) != string(w)+"\n" {
						t.Errorf("%s = %q (%v), want %q", rel, g, err, w)
					}
					return nil
				})
				for _, p := range meta.MustNotExist {
					if _, err := os.Stat(filepath.Join(work, p)); err == nil {
						t.Errorf("%s still exists", p)
					}
				}
			}
			if !t.Failed() {
				ok++
			}
		})
	}
	t.Logf("relaycode-e2e through relay apply: %d cases passed", ok)
}

func corpusHash(t *testing.T, dir string) string {
	t.Helper()
	h, err := treeHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
