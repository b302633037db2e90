package corpus

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// E2ECase is one relaycode end-to-end case (shared/corpus/patch/relaycode-e2e/<name>):
// a whole LLM response applied to a small tree, with the tree expected afterwards or,
// when the reference tool refused it, the tree left as it was.
type E2ECase struct {
	Name         string
	Dir          string
	WantOK       bool     // meta.json expected_outcome is "success"
	MustNotExist []string // paths the response deletes or renames away
}

// Response is the path of the case's LLM response.
func (c E2ECase) Response() string { return filepath.Join(c.Dir, "response.md") }

// Initial is the tree the response is applied to (path → content).
func (c E2ECase) Initial(t testing.TB) map[string]string {
	return ReadTree(t, filepath.Join(c.Dir, "initial"))
}

// Check compares a tree after a successful apply with the expected one and returns
// what differs, or "". relaycode trimmed the content it wrote, so its fixtures lose a
// file's final newline; relay keeps it (and gives new files one), which counts as equal.
func (c E2ECase) Check(t testing.TB, after map[string]string) string {
	want := ReadTree(t, filepath.Join(c.Dir, "expected"))
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, ok := after[p]
		if !ok {
			return p + " missing"
		}
		if got != want[p] && got != want[p]+"\n" {
			return fmt.Sprintf("%s differs:\n got: %q\nwant: %q", p, got, want[p])
		}
	}
	for _, p := range c.MustNotExist {
		if _, ok := after[p]; ok {
			return p + " must not exist"
		}
	}
	return ""
}

// E2ECases loads every relaycode end-to-end case, or skips t when the corpus is missing.
func E2ECases(t testing.TB) []E2ECase {
	t.Helper()
	root := Dir(t, "corpus/patch/relaycode-e2e")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var cases []E2ECase
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		var meta struct {
			Outcome      string   `json:"expected_outcome"`
			MustNotExist []string `json:"must_not_exist"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s/meta.json: %v", e.Name(), err)
		}
		cases = append(cases, E2ECase{Name: e.Name(), Dir: dir, WantOK: meta.Outcome == "success", MustNotExist: meta.MustNotExist})
	}
	return cases
}

// RunE2E is the relaycode end-to-end runner for anything that applies a response to a
// directory: for every case it copies the initial tree into a fresh directory, calls
// apply, and holds the result to the case: the expected tree on success, the unchanged
// tree (file modes included) on failure.
func RunE2E(t *testing.T, apply func(t *testing.T, work string, c E2ECase) error) {
	passed := 0
	for _, c := range E2ECases(t) {
		t.Run(c.Name, func(t *testing.T) {
			work := t.TempDir()
			if err := os.CopyFS(work, os.DirFS(filepath.Join(c.Dir, "initial"))); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			before := treeState(t, work)
			err := apply(t, work, c)
			switch {
			case !c.WantOK && err == nil:
				t.Fatal("applied; the reference tool refused this response")
			case !c.WantOK:
				if after := treeState(t, work); after != before {
					t.Errorf("tree changed on failure (%v)", err)
				}
			case err != nil:
				t.Fatalf("want success: %v", err)
			default:
				if msg := c.Check(t, ReadTree(t, work)); msg != "" {
					t.Error(msg)
				}
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("relaycode-e2e: %d cases passed", passed)
}

// ReadTree reads every regular file under dir (path with slashes → content), leaving
// out relay's .relaycode/ and .git/; a missing dir is an empty tree.
func ReadTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	walkTree(t, dir, func(rel string, fi fs.FileInfo, content []byte) {
		if fi.Mode().IsRegular() {
			tree[rel] = string(content)
		}
	})
	return tree
}

// treeState fingerprints dir: every path with its mode, and every file's content.
func treeState(t testing.TB, dir string) string {
	var b strings.Builder
	walkTree(t, dir, func(rel string, fi fs.FileInfo, content []byte) {
		fmt.Fprintf(&b, "%q %v %q\n", rel, fi.Mode(), content)
	})
	return b.String()
}

func walkTree(t testing.TB, dir string, visit func(rel string, fi fs.FileInfo, content []byte)) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".relaycode" || rel == ".git") {
			return filepath.SkipDir
		}
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var content []byte
		if fi.Mode().IsRegular() {
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		visit(filepath.ToSlash(rel), fi, content)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
