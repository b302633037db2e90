package txn

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/config"
)

// plan is a response applied in memory: the original and final state of
// every path it touches. Nothing is written until materialize.
type plan struct {
	order       []string // touched paths, first-touch order
	orig        map[string]vfile
	final       map[string]vfile
	createdDirs []string
	steps       []PlanStep
	opLines     []string
	renamedFrom map[string]string // final path -> original path, for stats
	written     []string
	pendingYAML []byte
	// resolved is each touched path with symlinks resolved, when different.
	resolved map[string]string
}

// PlanStep is one operation as it would be applied (relay apply --dry-run).
type PlanStep struct {
	Kind     patch.OpKind   `json:"type"`
	Path     string         `json:"path"`
	From     string         `json:"from,omitempty"`
	Strategy patch.Strategy `json:"strategy,omitempty"`
	New      bool           `json:"new,omitempty"`
	Added    int            `json:"added"`
	Removed  int            `json:"removed"`
	// Lines is where the change lands in the file before this operation
	// (1-based, inclusive; From > To means a pure insertion before From).
	LinesFrom int `json:"linesFrom,omitempty"`
	LinesTo   int `json:"linesTo,omitempty"`
	// Blocks says where each block or hunk matched, from the patch engine.
	Blocks         []patch.BlockResult `json:"blocks,omitempty"`
	AlreadyApplied bool                `json:"alreadyApplied,omitempty"`
	// Replaced: a rename onto an existing file replaced it (a codex Move to:).
	Replaced bool `json:"replaced,omitempty"`
}

// patchError is a code block that could not be applied to its file.
type patchError struct {
	Path     string
	Strategy patch.Strategy
	Err      error
}

func (e *patchError) Error() string {
	// Operation errors (opError) name their paths themselves.
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("cannot apply the %s block to %s: %v", e.Strategy, e.Path, e.Err)
}

func (e *patchError) Unwrap() error { return e.Err }

// opError is an operation that makes no sense on the current files.
func opError(format string, args ...any) error {
	return &patchError{Strategy: "file", Err: fmt.Errorf(format, args...)}
}

func (e *Engine) plan(proj *project, req Request) (*plan, error) {
	pl := &plan{orig: map[string]vfile{}, final: map[string]vfile{}, renamedFrom: map[string]string{}, resolved: map[string]string{}}
	dirSeen := map[string]bool{}
	touch := func(raw string) (string, error) {
		name, err := CleanPath(raw)
		if err != nil {
			return "", err
		}
		if _, ok := pl.orig[name]; ok {
			return name, nil
		}
		real, err := proj.check(name)
		if err != nil {
			return "", err
		}
		if real != name {
			pl.resolved[name] = real
		}
		f, err := proj.read(name)
		if err != nil {
			return "", err
		}
		pl.orig[name] = f
		pl.final[name] = f
		pl.order = append(pl.order, name)
		for _, d := range proj.missingDirs(name) {
			if !dirSeen[d] {
				dirSeen[d] = true
				pl.createdDirs = append(pl.createdDirs, d)
			}
		}
		return name, nil
	}
	apply := e.Patch
	if apply == nil {
		apply = patch.Apply
	}
	for i, op := range req.Response.Operations {
		switch op.Kind {
		case patch.OpWrite:
			name, err := touch(op.Path)
			if err != nil {
				return nil, err
			}
			cur := pl.final[name]
			strategy := op.Strategy
			if strategy == "" {
				strategy = patch.Replace
			}
			out := op.Content
			var blocks []patch.BlockResult
			already := false
			if req.RevertOf == "" || strategy != patch.Replace {
				// A revert writes snapshot bytes verbatim; anything else goes through the engine.
				var res patch.Result
				var err error
				if strategy == patch.EditStrategy && op.Edits != nil {
					res, err = patch.ApplyEditOp(cur.content, op.Edits) // typed edits: nothing to parse
				} else {
					res, err = apply(cur.content, cur.exists, strategy, op.Content, patch.Options{FuzzyThreshold: e.Opts.FuzzyThreshold})
				}
				var ae *patch.ApplyError
				switch {
				case errors.As(err, &ae) && ae.AlreadyApplied:
					out, already = cur.content, true // re-applying the same answer changes nothing
				case err != nil:
					return nil, &patchError{Path: name, Strategy: strategy, Err: err}
				case patch.AllNoOp(res.Blocks):
					out, already = cur.content, true // a diff of context-only hunks
				default:
					out, blocks = res.Content, res.Blocks
				}
			}
			next := vfile{content: out, exists: true, mode: cur.mode, modeSet: cur.modeSet}
			if !cur.exists {
				next.mode = 0o644
			}
			if m, ok := req.Modes[name]; ok {
				next.mode, next.modeSet = m.Perm(), true
			}
			pl.final[name] = next
			step := PlanStep{Kind: op.Kind, Path: name, Strategy: strategy, New: !cur.exists, Blocks: blocks, AlreadyApplied: already}
			step.Added, step.Removed = lineStat(cur.content, out)
			if af, at, _, _, ok := changedRange(cur.content, out); ok && cur.exists {
				step.LinesFrom, step.LinesTo = af, at
			}
			pl.steps = append(pl.steps, step)
			if already {
				pl.opLines = append(pl.opLines, fmt.Sprintf("✔ Unchanged: %s (the %s block is already applied)", name, strategy))
			} else {
				pl.opLines = append(pl.opLines, fmt.Sprintf("✔ Written: %s (+%d, -%d)", name, step.Added, step.Removed))
			}
		case patch.OpDelete:
			name, err := touch(op.Path)
			if err != nil {
				return nil, err
			}
			cur := pl.final[name]
			if !cur.exists {
				if req.RevertOf != "" {
					continue // a forced revert: the file is already gone
				}
				return nil, opError("operation %d deletes %s, which does not exist", i+1, name)
			}
			pl.final[name] = vfile{}
			pl.steps = append(pl.steps, PlanStep{Kind: op.Kind, Path: name, Removed: len(splitLines(cur.content))})
			pl.opLines = append(pl.opLines, "✔ Deleted: "+name)
		case patch.OpRename:
			from, err := touch(op.From)
			if err != nil {
				return nil, err
			}
			to, err := touch(op.To)
			if err != nil {
				return nil, err
			}
			src := pl.final[from]
			if !src.exists {
				return nil, opError("operation %d renames %s, which does not exist", i+1, from)
			}
			if from == to {
				continue
			}
			replaced := pl.final[to].exists
			if replaced && !op.Overwrite {
				// A rename that replaces a file loses it without a word; the
				// answer must say so by deleting the target first.
				return nil, opError("operation %d renames %s onto %s, which exists; relay does not replace a file by renaming onto it (delete %s earlier in the same answer to replace it)", i+1, from, to, to)
			}
			src.modeSet = true
			pl.final[to] = src
			pl.final[from] = vfile{}
			if orig, ok := pl.renamedFrom[from]; ok {
				pl.renamedFrom[to] = orig
				delete(pl.renamedFrom, from)
			} else {
				pl.renamedFrom[to] = from
			}
			pl.steps = append(pl.steps, PlanStep{Kind: op.Kind, Path: to, From: from, Replaced: replaced})
			if replaced {
				// codex's Move to: replaces the file; the snapshot keeps it for revert.
				pl.opLines = append(pl.opLines, fmt.Sprintf("✔ Renamed: %s -> %s (replacing the %s that was there)", from, to, to))
			} else {
				pl.opLines = append(pl.opLines, fmt.Sprintf("✔ Renamed: %s -> %s", from, to))
			}
		default:
			return nil, opError("operation %d has unknown type %q", i+1, op.Kind)
		}
	}
	return pl, nil
}

// materialize writes the planned final state: removals first (a file may
// give way to a directory of the same name), then writes.
func (pl *plan) materialize(proj *project) error {
	for _, name := range pl.order {
		o, f := pl.orig[name], pl.final[name]
		if o.exists && !f.exists {
			if err := proj.remove(name); err != nil {
				return fmt.Errorf("delete %s: %w", name, err)
			}
		}
	}
	for _, name := range pl.order {
		o, f := pl.orig[name], pl.final[name]
		if !f.exists || o.exists && o.content == f.content && o.mode == f.mode {
			continue
		}
		if o.exists && !f.modeSet {
			f.mode, f.modeSet = o.mode, false // O_TRUNC keeps the existing mode
		}
		if err := proj.write(name, f); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		pl.written = append(pl.written, name)
	}
	return nil
}

// configChanges lists the touched paths that are config files (any
// directory: relay run there reads it), whose content or existence changes.
func (pl *plan) configChanges() []string {
	var out []string
	for _, name := range pl.order {
		o, f := pl.orig[name], pl.final[name]
		if o.exists == f.exists && o.content == f.content {
			continue
		}
		if isConfigFile(name) || isConfigFile(pl.resolved[name]) {
			out = append(out, name)
		}
	}
	return out
}

func isConfigFile(name string) bool {
	base := path.Base(name)
	for _, c := range config.FileNames {
		if strings.EqualFold(base, c) {
			return true
		}
	}
	return false
}

func (pl *plan) syncWritten(proj *project) error {
	return parallel(pl.written, proj.sync)
}

// fileChanges summarises the net change of each path, renames folded in.
func (pl *plan) fileChanges() []FileChange {
	var out []FileChange
	consumed := map[string]bool{}
	for to, from := range pl.renamedFrom {
		if pl.final[to].exists && !pl.final[from].exists && pl.orig[from].exists {
			consumed[from] = true
		} else {
			delete(pl.renamedFrom, to)
		}
	}
	for _, name := range pl.order {
		o, f := pl.orig[name], pl.final[name]
		if consumed[name] {
			continue
		}
		if from, ok := pl.renamedFrom[name]; ok {
			a, r := lineStat(pl.orig[from].content, f.content)
			out = append(out, FileChange{Path: name, Action: "rename", From: from, Added: a, Removed: r})
			continue
		}
		switch {
		case !o.exists && f.exists:
			out = append(out, FileChange{Path: name, Action: "new", Added: len(splitLines(f.content))})
		case o.exists && !f.exists:
			out = append(out, FileChange{Path: name, Action: "delete", Removed: len(splitLines(o.content))})
		case o.exists && f.exists && (o.content != f.content || o.mode != f.mode):
			a, r := lineStat(o.content, f.content)
			out = append(out, FileChange{Path: name, Action: "edit", Added: a, Removed: r})
		}
	}
	return out
}

// Plan is what relay apply --dry-run shows.
type Plan struct {
	UUID  string       `json:"uuid"`
	Steps []PlanStep   `json:"operations"`
	Files []FileChange `json:"files"`
}

// DryRun validates a response and applies it in memory only: nothing is
// run, locked or written.
func (e *Engine) DryRun(req Request) (*Plan, error) {
	if err := e.validate(req.Response); err != nil {
		return nil, err
	}
	proj, err := openProject(e.Dir)
	if err != nil {
		return nil, err
	}
	defer proj.close()
	pl, err := e.plan(proj, req)
	if err != nil {
		return nil, err
	}
	return &Plan{UUID: req.Response.Control.UUID, Steps: pl.steps, Files: pl.fileChanges()}, nil
}
