//go:build unix

package ask

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/relaydev/relay/internal/ask/backend"
)

const benchFake = `#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "--output-last-message" ] && out="$a"; prev="$a"; done
cat > /dev/null
[ -n "$out" ] && printf 'fake answer\n' > "$out"
printf '{"type":"item.completed","item":{"type":"agent_message","text":"fake answer"}}\n'
`

func benchSetup(b *testing.B) (fake, repo string) {
	dir := b.TempDir()
	fake = filepath.Join(dir, "codex")
	if err := os.WriteFile(fake, []byte(benchFake), 0o755); err != nil {
		b.Fatal(err)
	}
	repo = filepath.Join(dir, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		b.Fatal(err)
	}
	return fake, repo
}

// BenchmarkAskCodexFake is relay ask's in-process path (validation, envelope,
// temp dir, spawn, reading the answer) against a fake codex that answers at once.
// Compare with BenchmarkFakeDirect: the difference is ask's own overhead.
func BenchmarkAskCodexFake(b *testing.B) {
	fake, repo := benchSetup(b)
	a := &Asker{
		Backend: func(name string) (backend.Backend, bool) {
			return backend.New(name, backend.Options{LookPath: func(string) (string, error) { return fake, nil }})
		},
		Git: runGit, Now: nil,
	}
	req := Request{To: []string{"codex"}, Prompt: "Review this change for bugs, please.", Repo: repo,
		TimeoutSeconds: 60, MaxDepth: 1, Env: os.Environ()}
	b.ResetTimer()
	for b.Loop() {
		answers, err := a.Ask(context.Background(), req)
		if err != nil || answers[0].Err != nil || answers[0].Text != "fake answer" {
			b.Fatalf("%v %+v", err, answers)
		}
	}
}

// BenchmarkFakeDirect runs the same fake with the same stdin, without ask.
func BenchmarkFakeDirect(b *testing.B) {
	fake, repo := benchSetup(b)
	out := filepath.Join(b.TempDir(), "codex-last-message.txt")
	env := os.Environ()
	prompt := BuildEnvelope(repo, "Review this change for bugs, please.", "", "")
	b.ResetTimer()
	for b.Loop() {
		o, err := backend.ProcessRunner(context.Background(), backend.Invocation{Path: fake,
			Args: []string{"exec", "-C", repo, "--output-last-message", out, "-"}, Dir: repo, Env: env, Stdin: prompt})
		if err != nil || o.ExitCode != 0 {
			b.Fatal(err)
		}
	}
}
