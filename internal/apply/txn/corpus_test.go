package txn

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testcorpus"

	"github.com/relaydev/relay/internal/apply/patch"
)

// findCorpus walks up from the test's directory to shared/corpus beside the repository.
func findCorpus(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		for _, p := range []string{filepath.Join(d, "shared", "corpus"), filepath.Join(d, "..", "shared", "corpus")} {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				return p
			}
		}
	}
	testcorpus.Skip(t, "corpus")
	return ""
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// TestRelaycodeE2ECorpus applies every nocapro/relaycode end-to-end response with -y to its
// initial tree through the real parser and engine, and compares the result.
func TestRelaycodeE2ECorpus(t *testing.T) {
	root := filepath.Join(findCorpus(t), "patch", "relaycode-e2e")
	cases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, c := range cases {
		if !c.IsDir() || strings.HasPrefix(c.Name(), "_") {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join(root, c.Name())
			var meta struct {
				Outcome      string   `json:"expected_outcome"`
				MustNotExist []string `json:"must_not_exist"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(filepath.Join(dir, "response.md"))
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			copyTree(t, filepath.Join(dir, "initial"), work)
			before := treeHash(t, work)
			resp, perr := patch.Parse(string(text))
			var runErr error
			if perr != nil {
				runErr = perr
			} else {
				e := &Engine{Dir: work, Opts: Options{ProjectID: "test-project", ApprovalMode: "auto"}}
				_, runErr = e.Run(context.Background(), Request{Response: resp, Yes: true})
			}
			if meta.Outcome == "failure" {
				if runErr == nil {
					t.Fatalf("applied, want failure")
				}
				if treeHash(t, work) != before {
					t.Errorf("tree changed on failure: %v", runErr)
				}
				if len(pendingFiles(t, work)) != 0 {
					t.Errorf("pending record left")
				}
				if !t.Failed() {
					passed++
				}
				return
			}
			if runErr != nil {
				t.Fatalf("want success: %v", runErr)
			}
			copyTreeCheck(t, filepath.Join(dir, "expected"), work)
			for _, p := range meta.MustNotExist {
				if _, err := os.Stat(filepath.Join(work, p)); err == nil {
					t.Errorf("%s exists, want it gone", p)
				}
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("relaycode-e2e: %d cases passed", passed)
}

// copyTreeCheck compares every file under want with the same path in got.
func copyTreeCheck(t *testing.T, want, got string) {
	t.Helper()
	_ = filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		w, _ := os.ReadFile(p)
		g, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		// Deliberate difference: relay writes whole files ending in a newline, relaycode trimmed it.
		if string(g) != string(w) && string(g) != string(w)+"\n" {
			t.Errorf("%s differs:\n got %q\nwant %q", rel, g, w)
		}
		return nil
	})
}
