package txn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/testsupport"
)

// response200 builds a response touching n files: half whole-file writes of
// new files, half SEARCH/REPLACE edits of existing 60-line files.
func response200(dir string, n int) (string, error) {
	var b strings.Builder
	for i := range n {
		name := fmt.Sprintf("src/pkg%02d/file%03d.go", i%20, i)
		if i%2 == 0 {
			fmt.Fprintf(&b, "Creating %s.\n\n```go // %s\n", name, name)
			for l := range 60 {
				fmt.Fprintf(&b, "// line %d of new file %d\n", l, i)
			}
			b.WriteString("```\n\n")
			continue
		}
		var orig strings.Builder
		for l := range 60 {
			fmt.Fprintf(&orig, "func f%d_%d() int { return %d }\n", i, l, l)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(orig.String()), 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "Editing %s.\n\n```go // %s multi-search-replace\n<<<<<<< SEARCH\nfunc f%d_30() int { return 30 }\n=======\nfunc f%d_30() int { return 300 }\n>>>>>>> REPLACE\n```\n\n", name, name, i, i)
	}
	fmt.Fprintf(&b, "```yaml\nprojectId: bench\nuuid: %s\ngitCommitMsg: bench\n```\n", uuid.NewString())
	return b.String(), nil
}

// BenchmarkRun200Files is the clipboard-text-to-committed path of relay watch for a
// 200-file response without a linter: parse, snapshot, fsynced pending record,
// apply, fsync of the written files, committed record.
func BenchmarkRun200Files(b *testing.B) {
	cpu := startCPU()
	defer cpu.report(b)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		text, err := response200(dir, 200)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		resp, err := patch.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		e := &Engine{Dir: dir, Opts: Options{ProjectID: "bench", ApprovalMode: "auto"}}
		if _, err := e.Run(context.Background(), Request{Response: resp, Yes: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRollback200Files measures a failed 200-file transaction: applied,
// then the post-command fails and everything is restored.
func BenchmarkRollback200Files(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		text, err := response200(dir, 200)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := patch.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		fail := func(context.Context, string, string) (CommandResult, error) { return CommandResult{ExitCode: 1}, nil }
		e := &Engine{Dir: dir, Opts: Options{ProjectID: "bench", ApprovalMode: "auto", PostCommand: "false"}, Shell: fail}
		b.StartTimer()
		if _, err := e.Run(context.Background(), Request{Response: resp, Yes: true}); err == nil {
			b.Fatal("want failure")
		}
	}
}

// BenchmarkRun200FilesNoSync is BenchmarkRun200Files without the fsync of the
// written project files, to show what durability costs.
func BenchmarkRun200FilesNoSync(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		text, err := response200(dir, 200)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		resp, err := patch.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		e := &Engine{Dir: dir, Opts: Options{ProjectID: "bench", ApprovalMode: "auto"}, NoSync: true}
		if _, err := e.Run(context.Background(), Request{Response: resp, Yes: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuClock reports the process's CPU time (user+system) per operation next to
// ns/op, which on a loaded machine mostly measures waiting for a core.
type cpuClock struct{ start time.Duration }

func startCPU() *cpuClock { return &cpuClock{start: testsupport.CPUTime()} }

func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64((testsupport.CPUTime()-c.start).Milliseconds())/float64(b.N), "cpu-ms/op")
}
