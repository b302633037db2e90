package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// PatchOptions are the inputs of `relay patch`.
type PatchOptions struct {
	IO      *iostreams.IOStreams
	WorkDir func() (string, error)

	File      string
	PatchPath string // "-" reads stdin
	Strategy  string
	Fuzz      float64
	FuzzSet   bool
	Write     bool
	JSON      bool
}

func newCmdPatch(f *Factory) *cobra.Command {
	opts := &PatchOptions{IO: f.IO, WorkDir: f.WorkDir}
	cmd := &cobra.Command{
		Use:   "patch [--strategy S] [--fuzz 0.9] [--write] [--json] FILE PATCH",
		Short: "Apply one patch to one file and print the result",
		Long: `Apply one patch (SEARCH/REPLACE blocks, a unified diff, a codex apply_patch
section, or a whole file) to FILE and print the new content. Nothing changes
unless --write is given; then FILE is replaced atomically, keeping its mode.

PATCH may be - to read stdin. FILE may be missing when the patch creates it.
The strategy is inferred from the patch unless --strategy names one of:
replace, new-unified, multi-search-replace (search-replace), unified
(standard-diff), apply-patch, edit. An edit patch is JSON
{"old_string", "new_string", "replace_all"} (one, a list, or {"edits": [...]})
or SEARCH/REPLACE blocks whose SEARCH may be part of a line; each replaces a
unique substring, or every occurrence with replace_all.

A patch applies whole or not at all. Exit status: 0 applied, 1 the patch does
not apply (every failing block is listed with its closest match), 2 bad usage.`,
		Example: `  relay patch src/app.ts fix.diff
  pbpaste | relay patch --write src/app.ts -
  relay patch --json --strategy multi-search-replace main.go edit.txt
  echo '{"old_string":"retries: 3","new_string":"retries: 5"}' | relay patch -s edit config.yaml -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File, opts.PatchPath = args[0], args[1]
			opts.FuzzSet = cmd.Flags().Changed("fuzz")
			if opts.Strategy != "" {
				if _, ok := patch.ParseStrategy(opts.Strategy); !ok {
					return WithHint(Usagef("unknown strategy %q", opts.Strategy), "use one of: replace, new-unified, multi-search-replace, unified, apply-patch, edit")
				}
			}
			if opts.FuzzSet && (opts.Fuzz <= 0 || opts.Fuzz > 1) {
				return WithHint(Usagef("--fuzz must be a similarity above 0 and at most 1, got %g", opts.Fuzz), "relay patch --fuzz 0.9 FILE PATCH")
			}
			return patchRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Strategy, "strategy", "s", "", "patch format (default: inferred from the patch)")
	// Registered with a zero default: the real default comes from the project config, and
	// the usage text says so once (pflag would add its own "(default 0.9)").
	cmd.Flags().Float64Var(&opts.Fuzz, "fuzz", 0, fmt.Sprintf("minimum line similarity for a fuzzy match, 0-1 (default: patch.fuzzyThreshold from the project config, else %g)", patch.DefaultFuzzyThreshold))
	cmd.Flags().BoolVarP(&opts.Write, "write", "w", false, "write the result to FILE instead of printing it")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print {ok, strategy, blocks, error} as JSON")
	return cmd
}

// patchJSON is the --json output; field names are stable.
type patchJSON struct {
	OK             bool                 `json:"ok"`
	File           string               `json:"file"`
	Strategy       patch.Strategy       `json:"strategy"`
	Written        bool                 `json:"written"`
	Blocks         []patch.BlockResult  `json:"blocks"`
	Error          string               `json:"error,omitempty"`
	AlreadyApplied bool                 `json:"alreadyApplied,omitempty"`
	Failures       []patch.BlockFailure `json:"failures,omitempty"`
	Content        *string              `json:"content,omitempty"`
}

func patchRun(opts *PatchOptions) error {
	body, err := readPatchInput(opts)
	if err != nil {
		return err
	}
	st := patch.Strategy(opts.Strategy)
	if s, ok := patch.ParseStrategy(opts.Strategy); ok {
		st = s
	}
	// A whole LLM response works too: use its block for FILE.
	resp, perr := patch.Parse(body)
	var cut *patch.CutOffError
	if errors.As(perr, &cut) {
		return WithHint(fmt.Errorf("cannot apply the patch to %s: %w", opts.File, cut), "copy the whole answer (it ends with the YAML block), or ask the LLM to finish it")
	}
	if perr == nil {
		op, err := opForFile(resp, opts.File)
		if err != nil {
			return err
		}
		body = op.Content
		if st == "" {
			st = op.Strategy
		}
	} else if inner, fenced, ok := patch.Unfence(body); ok {
		// A patch pasted with its markdown fence still works.
		body = inner
		if st == "" {
			st = fenced
		}
	}
	inferred := st == ""
	if inferred {
		st = patch.InferStrategy(body)
		// Markers without a complete block are a broken patch; say so instead of
		// writing the patch text over the file.
		if st == patch.Replace && patch.HasSearchReplaceMarkers(body) {
			st = patch.MultiSearchReplace
		}
	}

	target, err := resolveTarget(opts.File)
	if err != nil {
		return err
	}
	original, exists, mode, err := readTarget(target)
	if err != nil {
		return err
	}

	res, err := patch.Apply(original, exists, st, body, patch.Options{FuzzyThreshold: fuzzThreshold(opts)})
	out := patchJSON{File: opts.File, Strategy: st, Blocks: res.Blocks}
	if out.Blocks == nil {
		out.Blocks = []patch.BlockResult{}
	}
	if err != nil {
		if !exists && !opts.JSON {
			var ae *patch.ApplyError
			if errors.As(err, &ae) {
				return WithHint(fmt.Errorf("%s does not exist, and this %s patch changes existing lines: %w", opts.File, st, err), "check the path; a new file needs a whole-file block, a diff from /dev/null, or an empty SEARCH")
			}
		}
		return patchFailed(opts, out, err)
	}
	out.OK = true
	if opts.Write {
		if err := writeFileAtomic(target, res.Content, mode); err != nil {
			return fmt.Errorf("cannot write %s: %w; the file is unchanged", opts.File, err)
		}
		out.Written = true
	}
	if opts.JSON {
		if !opts.Write {
			out.Content = &res.Content
		}
		return writeJSON(opts.IO.Out, out)
	}
	if !opts.Write {
		if _, err := io.WriteString(opts.IO.Out, res.Content); err != nil {
			return err
		}
		for _, n := range blockNotes(res.Blocks) {
			fmt.Fprintln(opts.IO.ErrOut, "note: "+n)
		}
		if inferred && st == patch.Replace {
			fmt.Fprintln(opts.IO.ErrOut, "note: no SEARCH/REPLACE blocks or diff hunks found; the patch is the whole new file")
		}
		return nil
	}
	if inferred && st == patch.Replace {
		fmt.Fprintln(opts.IO.ErrOut, "note: no SEARCH/REPLACE blocks or diff hunks found; the patch is the whole new file")
	}
	fmt.Fprintf(opts.IO.ErrOut, "Patched %s (%s, %s)\n", opts.File, st, summarizeBlocks(res.Blocks))
	for _, n := range blockNotes(res.Blocks) {
		fmt.Fprintln(opts.IO.ErrOut, "note: "+n)
	}
	return nil
}

func fuzzThreshold(opts *PatchOptions) float64 {
	if opts.FuzzSet {
		return opts.Fuzz
	}
	// The project's patch.fuzzyThreshold applies when relay patch runs inside a project.
	if opts.WorkDir != nil {
		if dir, err := opts.WorkDir(); err == nil {
			if cfg, _, err := config.Load(dir); err == nil && cfg.Patch.FuzzyThreshold > 0 && cfg.Patch.FuzzyThreshold <= 1 {
				return cfg.Patch.FuzzyThreshold
			}
		}
	}
	return patch.DefaultFuzzyThreshold
}

func readPatchInput(opts *PatchOptions) (string, error) {
	if opts.PatchPath == "-" {
		if opts.IO.IsStdinTTY() {
			return "", WithHint(Usagef("PATCH is - but stdin is a terminal"), "pipe the patch in: pbpaste | relay patch FILE -")
		}
		b, err := io.ReadAll(opts.IO.In)
		if err != nil {
			return "", fmt.Errorf("cannot read the patch from stdin: %w", err)
		}
		if len(b) == 0 {
			return "", WithHint(Usagef("the patch on stdin is empty"), "pipe the patch in: pbpaste | relay patch FILE -")
		}
		return string(b), nil
	}
	b, err := os.ReadFile(opts.PatchPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", WithHint(Usagef("patch file %s does not exist", opts.PatchPath), "give the patch as a file, or - to read stdin")
		}
		return "", fmt.Errorf("cannot read the patch: %w", err)
	}
	return string(b), nil
}

// resolveTarget follows a symlink so --write replaces the file it points to, not the link.
func resolveTarget(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return p, nil
	}
	t, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s is a broken symlink: %w", p, err)
	}
	return t, nil
}

func readTarget(p string) (content string, exists bool, mode os.FileMode, err error) {
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, 0o644, nil
	}
	if err != nil {
		return "", false, 0, fmt.Errorf("cannot read %s: %w", p, err)
	}
	if fi.IsDir() {
		return "", false, 0, WithHint(Usagef("%s is a directory; relay patch changes one file", p), "relay patch FILE PATCH")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false, 0, fmt.Errorf("cannot read %s: %w", p, err)
	}
	return string(b), true, fi.Mode().Perm(), nil
}

func patchFailed(opts *PatchOptions, out patchJSON, err error) error {
	var ae *patch.ApplyError
	if !errors.As(err, &ae) {
		return err
	}
	out.Error = err.Error()
	out.AlreadyApplied = ae.AlreadyApplied
	out.Failures = ae.Failures
	if opts.JSON {
		if werr := writeJSON(opts.IO.Out, out); werr != nil {
			return werr
		}
		return ExitCode(exitError, ErrSilent)
	}
	if ae.AlreadyApplied {
		return fmt.Errorf("%s: %w; nothing to do", opts.File, err)
	}
	hint := "fix the blocks listed above (copy the exact lines from the file), then run relay patch again"
	for _, f := range ae.Failures {
		if f.NoOp {
			hint = "drop the blocks that change nothing, or ask the LLM for the change it meant, then run relay patch again"
			break
		}
	}
	best := 0.0
	for _, f := range ae.Failures {
		if f.Vetoed != "" {
			best = 0 // a looser threshold cannot fix a changed number or name
			break
		}
		best = max(best, f.Similarity)
	}
	// A looser threshold only helps blocks that fell short of it, not vetoed ones.
	if thr := fuzzThreshold(opts); best >= 0.7 && best < thr && !opts.FuzzSet {
		hint = fmt.Sprintf("check the differing lines; to accept a looser match: relay patch --fuzz %.2f %s %s", math.Floor(best*100)/100, opts.File, opts.PatchPath)
	}
	return WithHint(fmt.Errorf("cannot apply the patch to %s, nothing was changed: %w", opts.File, err), hint)
}

func summarizeBlocks(bs []patch.BlockResult) string {
	counts := map[string]int{}
	var order []string
	for _, b := range bs {
		k := b.Method
		if b.Status == "already-applied" {
			k = "already applied"
		}
		if b.Status == "no-op" {
			k = "no-op"
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	noun := "blocks"
	if len(bs) == 1 {
		noun = "block"
	}
	return fmt.Sprintf("%d %s: %s", len(bs), noun, strings.Join(parts, ", "))
}

// blockNotes points out blocks that did not match exactly, so a user can check them.
func blockNotes(bs []patch.BlockResult) []string {
	var notes []string
	for _, b := range bs {
		switch {
		case b.Status == "no-op":
			notes = append(notes, fmt.Sprintf("block %d changes nothing (its old and new text are identical)", b.Index))
		case b.Status == "already-applied":
			notes = append(notes, fmt.Sprintf("block %d was already applied (line %d)", b.Index, b.Line))
		case b.Method == "fuzzy":
			notes = append(notes, fmt.Sprintf("block %d matched fuzzily at line %d (%d%% similar)", b.Index, b.Line, int(b.Similarity*100)))
		case b.Method == "indentation":
			notes = append(notes, fmt.Sprintf("block %d matched at line %d ignoring indentation; re-indented to fit", b.Index, b.Line))
		}
	}
	return notes
}

// writeFileAtomic replaces p with content crash-safely, so a crash leaves either the old
// or the new file.
func writeFileAtomic(p, content string, mode os.FileMode) error {
	return atomicfile.Write(p, mode, atomicfile.Options{MkdirPerm: 0o755}, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	})
}

// opForFile picks the one write operation of a response whose path is file
// (or a path file ends with, when relay patch runs from a parent directory).
func opForFile(resp *patch.Response, file string) (patch.Operation, error) {
	want := filepath.ToSlash(filepath.Clean(file))
	var paths []string
	var found []patch.Operation
	for _, op := range resp.Operations {
		if op.Kind != patch.OpWrite {
			continue
		}
		paths = append(paths, op.Path)
		if op.Path == want || strings.HasSuffix(want, "/"+op.Path) {
			found = append(found, op)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return patch.Operation{}, WithHint(Usagef("the response has no block that writes %s (it writes: %s)", file, strings.Join(paths, ", ")), "apply the whole response with: relay apply FILE")
	}
	return patch.Operation{}, WithHint(Usagef("the response has %d blocks for %s; relay patch applies one", len(found), file), "apply the whole response with: relay apply FILE")
}
