package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// A missing corpus skips the test and leaves a line in $RELAY_SKIP_LOG (one per skip).
func TestSkipIsLogged(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv("RELAY_SKIP_LOG", log)
	ran := false
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			Dir(t, "corpus/no-such-corpus-here")
			ran = true
		})
	}
	if ran {
		t.Fatal("Dir returned for a missing corpus instead of skipping")
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "corpus/no-such-corpus-here\tTestSkipIsLogged/a\ncorpus/no-such-corpus-here\tTestSkipIsLogged/b\n"
	if string(b) != want {
		t.Errorf("skip log:\n%q\nwant\n%q", b, want)
	}
}

func TestFindPresent(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shared", "corpus", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "repo", "internal", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if got := Find("corpus/x"); got != filepath.Join(dir, "shared", "corpus", "x") {
		t.Errorf("Find = %q", got)
	}
}
