package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/workspace"
)

// ApplyOptions are the inputs of `relay apply`.
type ApplyOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	File   string // path or "-" for stdin
	Yes    bool
	DryRun bool
	JSON   bool
	// AllowConfigChange lets -y or automatic approval cover an answer that
	// changes a config file (it names the commands relay runs).
	AllowConfigChange bool
	// Format forces how the answer is read (relay, diff, codex, search-replace,
	// edit, whole); "" detects it.
	Format string
	// Home returns $RELAY_HOME, where the record key lives.
	Home func() (string, error)
	// Memory records transactions in the thread (nil: do not record); Thread is --thread.
	Memory *workspace.Memory
	Thread string
}

func newCmdApply(f *Factory) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Config: f.ProjectConfig, Home: f.Home}
	cmd := &cobra.Command{
		Use:     "apply <file|->",
		Aliases: []string{"a"},
		Short:   "Apply an LLM response from a file or stdin as one transaction",
		Long: `Apply an LLM answer to the project as one transaction: relay's own format
(code blocks plus the final YAML control block), or an answer written for any
other tool: a unified or git diff, a codex *** Begin Patch envelope, aider,
Cline or Roo SEARCH/REPLACE blocks, Claude Code Edit/MultiEdit or
str_replace_editor JSON, or whole files in code blocks that name their path.
The format is detected (stdout names it: "format: git diff, 3 files"); an
answer that mixes formats is refused, and --format reads only the one named.
An answer without the control block gets a new uuid and a summary taken from
its text.

Each transaction runs: preCommand, linter baseline, snapshot and a
pending record in .relaycode/, the file operations, postCommand, the linter
again, then approval. Approved changes are committed to .relaycode/<uuid>.yml;
anything else is rolled back byte for byte.

Approval: -y approves; approvalMode "auto" approves when the patch adds at
most approvalOnErrorCount new linter errors (final count minus the baseline);
otherwise relay asks on the terminal, and rolls back when there is no
terminal to ask on. An answer that changes relaycode.config.json or
relay.config.json (they name the commands relay runs) is never approved by -y
or automatically: relay asks on the terminal, and without one refuses unless
--allow-config-change is given.

Input is limited to 64 MiB.

A uuid that was committed is skipped; a response whose transaction was rolled
back can be applied again. A crash never leaves the project half-changed: the
next relay command in the project restores it from the pending record.`,
		Example: `  relay apply answer.md
  pbpaste | relay apply - -y
  relay apply --dry-run answer.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			opts.Memory = f.memory()
			return applyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Thread, "thread", "", "record the transaction in this memory thread (default $RELAY_THREAD, then the project's thread; skipped when none)")
	cmd.Flags().StringVar(&opts.Format, "format", "", "read the answer in this format only: relay, diff, codex, search-replace, edit or whole (default: detect)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve the changes without asking")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change and touch nothing")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result (or the --dry-run plan) as JSON")
	cmd.Flags().BoolVar(&opts.AllowConfigChange, "allow-config-change", false, "let -y or automatic approval cover changes to relaycode.config.json (read the change first)")
	return cmd
}

// maxResponseBytes bounds what relay apply reads: far above any answer an
// LLM writes, far below what would exhaust memory.
const maxResponseBytes = 64 << 20

// readResponse reads the answer from a file or stdin ("-") under the size
// limit, checking a file's size before reading it, and gives up when ctx is
// cancelled (Ctrl-C while a FIFO has no writer or stdin is slow).
func readResponse(ctx context.Context, in io.Reader, file string) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var r io.Reader = in
		if file != "-" {
			f, err := os.Open(file) // a FIFO blocks here until a writer opens it
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer f.Close()
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > maxResponseBytes {
				ch <- result{err: fmt.Errorf("%s is %d bytes, over the %d MiB limit for a response", file, fi.Size(), maxResponseBytes>>20)}
				return
			}
			r = f
		}
		data, err := io.ReadAll(io.LimitReader(r, maxResponseBytes+1))
		if err == nil && len(data) > maxResponseBytes {
			err = fmt.Errorf("%s is over the %d MiB limit for a response", displayName(file), maxResponseBytes>>20)
		}
		ch <- result{data, err}
	}()
	select {
	case res := <-ch:
		return res.data, res.err
	case <-ctx.Done():
		return nil, ExitCode(exitInterrupt, fmt.Errorf("interrupted while reading the response from %s", displayName(file)))
	}
}

func applyRun(ctx context.Context, opts *ApplyOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	data, err := readResponse(ctx, opts.IO.In, opts.File)
	var code *exitCodeError
	if errors.As(err, &code) {
		return err
	}
	if err != nil {
		return WithHint(fmt.Errorf("read the response: %w", err),
			"relay apply FILE with the saved LLM answer, or relay apply - < answer.md")
	}
	format, err := answerFormat(opts.Format)
	if err != nil {
		return err
	}
	ws := personWorkspace(opts.IO, cfg, opts.Home, opts.Memory, opts.Thread)
	out, err := ws.Apply(ctx, workspace.AnswerRequest{Text: string(data), Source: opts.File, Format: format,
		Yes: opts.Yes, AllowConfigChange: opts.AllowConfigChange, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	if opts.DryRun {
		if opts.JSON {
			return writeJSON(opts.IO.Out, struct {
				Format patch.Format `json:"format"`
				*txn.Plan
			}{out.Answer.Format, out.Plan})
		}
		printFormat(opts.IO.Out, out.Answer)
		printPlan(opts.IO.Out, out.Plan)
		return nil
	}
	if !opts.JSON {
		printFormat(opts.IO.Out, out.Answer)
	}
	return printCommitted(opts.IO, out.Result, opts.JSON, out.Answer.Format)
}

// answerFormat reads --format.
func answerFormat(name string) (patch.Format, error) {
	if name == "" {
		return "", nil
	}
	f, ok := patch.ParseFormat(name)
	if !ok {
		return "", WithHint(fmt.Errorf("unknown --format %q", name), "use one of relay, diff, codex, search-replace, edit, whole, or leave --format out to detect it")
	}
	return f, nil
}

// printFormat names the format an answer was read in: "format: git diff, 3 files".
func printFormat(w io.Writer, resp *patch.Response) {
	if resp.Format == "" {
		return
	}
	n := len(resp.Files())
	fmt.Fprintf(w, "format: %s, %d %s\n", resp.Format.Label(), n, map[bool]string{true: "file", false: "files"}[n == 1])
}

func displayName(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}

var (
	stdinMu     sync.Mutex
	stdinReader *bufio.Reader
	stdinSrc    io.Reader
)

// askYesNo asks a yes/no question on the terminal; only y or yes approve.
// Ctrl-C while waiting returns the context's error.
func askYesNo(ctx context.Context, ios *iostreams.IOStreams, question string) (bool, error) {
	fmt.Fprint(ios.ErrOut, question)
	stdinMu.Lock()
	if stdinSrc != ios.In {
		stdinReader, stdinSrc = bufio.NewReader(ios.In), ios.In
	}
	r := stdinReader
	stdinMu.Unlock()
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := r.ReadString('\n')
		ch <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(ios.ErrOut)
		return false, ctx.Err()
	case a := <-ch:
		if a.err != nil && a.line == "" {
			return false, nil
		}
		s := strings.ToLower(strings.TrimSpace(a.line))
		return s == "y" || s == "yes", nil
	}
}

// notify sends a desktop notification when notify-send exists; it never
// blocks or fails the caller.
func notify(title, body string) {
	if _, err := exec.LookPath("notify-send"); err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = run.Command(ctx, "notify-send", "--app-name=relay", title, body).Run()
	}()
}

// recoverWorkDir recovers the project governing the working directory, if
// there is one; the root command calls it before every command that runs no
// transaction of its own (those recover under the transaction's lock).
func recoverWorkDir(f *Factory) error {
	dir, err := f.WorkDir()
	if err != nil {
		return nil
	}
	file, err := config.Find(dir)
	if err != nil {
		return nil // not in a project: nothing to recover
	}
	ws := personWorkspace(f.IO, &config.Config{Dir: filepath.Dir(file)}, f.Home, nil, "")
	return ws.Recover()
}

func printPlan(w io.Writer, plan *txn.Plan) {
	fmt.Fprintf(w, "Plan for %s (dry run, nothing changed):\n", plan.UUID)
	for i, s := range plan.Steps {
		switch s.Kind {
		case patch.OpDelete:
			fmt.Fprintf(w, "%3d. delete %s (-%d)\n", i+1, s.Path, s.Removed)
		case patch.OpRename:
			fmt.Fprintf(w, "%3d. rename %s -> %s\n", i+1, s.From, s.Path)
		default:
			verb := "edit"
			if s.New {
				verb = "create"
			}
			fmt.Fprintf(w, "%3d. %s %s [%s] (+%d -%d)", i+1, verb, s.Path, s.Strategy, s.Added, s.Removed)
			if s.AlreadyApplied {
				fmt.Fprint(w, " already applied, unchanged")
			} else if s.LinesFrom > 0 && !s.New {
				fmt.Fprintf(w, " at lines %d-%d", s.LinesFrom, max(s.LinesTo, s.LinesFrom))
			}
			fmt.Fprintln(w)
			for _, b := range s.Blocks {
				if b.Line > 0 && len(s.Blocks) > 1 || b.Method != "" && b.Method != "exact" && b.Method != "replace" && b.Method != "create" {
					fmt.Fprintf(w, "       block %d: line %d, %s match", b.Index, b.Line, b.Method)
					if b.Similarity > 0 && b.Similarity < 1 {
						fmt.Fprintf(w, " (%.0f%% similar)", b.Similarity*100)
					}
					fmt.Fprintln(w)
				}
			}
		}
	}
}

type committedJSON struct {
	UUID      string           `json:"uuid"`
	Format    patch.Format     `json:"format,omitempty"`
	Files     []txn.FileChange `json:"files"`
	Baseline  int              `json:"linterBaseline"`
	Final     int              `json:"linterFinal"`
	Branch    string           `json:"branch,omitempty"`
	RevertOf  string           `json:"revertOf,omitempty"`
	ElapsedMS int64            `json:"elapsedMs"`
}

func printCommitted(ios *iostreams.IOStreams, res *txn.Result, asJSON bool, format patch.Format) error {
	st := res.State
	if res.BranchErr != nil {
		fmt.Fprintf(ios.ErrOut, "Warning: %v (the transaction is committed).\n", res.BranchErr)
	} else if res.Branch != "" {
		fmt.Fprintf(ios.ErrOut, "Switched to a new git branch %s.\n", res.Branch)
	}
	if asJSON {
		branch := res.Branch
		if res.BranchErr != nil {
			branch = ""
		}
		return writeJSON(ios.Out, committedJSON{UUID: st.UUID, Format: format, Files: workspace.NonNilFiles(st.Files), Baseline: res.Baseline, Final: res.Final,
			Branch: branch, RevertOf: st.RevertOf, ElapsedMS: res.Duration.Milliseconds()})
	}
	added, removed := workspace.Stat(st)
	_, err := fmt.Fprintf(ios.Out, "Committed transaction %s: %d file(s) changed, +%d -%d, in %s.\n",
		st.UUID, len(st.Files), added, removed, res.Duration.Round(time.Millisecond))
	return err
}

// recordKey is this machine's record key, or nil when there is none (then no record in a
// project can be this machine's).
func recordKey(home func() (string, error)) []byte {
	if home == nil {
		home = relayhome.Dir
	}
	h, err := home()
	if err != nil {
		return nil
	}
	key, _ := txn.ReadRecordKey(h)
	return key
}

// warnIgnored names each committed record relay left out, and why.
func warnIgnored(w io.Writer, ignored []txn.Ignored) {
	for _, ig := range ignored {
		fmt.Fprintf(w, "Warning: ignored %s: %s.\n", ig.Record, ig.Why)
	}
	if len(ignored) > 0 {
		fmt.Fprintln(w, "Try: relay acts only on records it wrote on this machine; move the others out of .relaycode/ if you do not need them")
	}
}
