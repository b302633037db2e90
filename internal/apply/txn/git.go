package txn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/relaydev/relay/internal/run"
)

// Compiled on first use: every relay command pays for package init, few make a branch.
var (
	slugDrop  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^\p{L}\p{N}_\s-]+`) })
	slugSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\s_]+`) })
	slugDash  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-+`) })
)

// BranchSlug turns a commit message into a branch name segment as relaycode
// does: lowercase, only letters, digits, spaces and dashes kept, spaces and
// underscores to dashes, at most 70 characters; fallback when nothing is left.
func BranchSlug(msg, fallback string) string {
	s := strings.ToLower(strings.TrimSpace(firstLine(msg)))
	s = slugDrop().ReplaceAllString(s, "")
	s = slugSpace().ReplaceAllString(s, "-")
	s = slugDash().ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if r := []rune(s); len(r) > 70 {
		s = strings.TrimRight(string(r[:70]), "-")
	}
	if s == "" {
		return fallback
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// BranchName is the branch autoGitBranch creates for a transaction.
func BranchName(opts Options, st *State) string {
	seg := st.UUID
	if opts.GitBranchTemplate != "uuid" {
		seg = BranchSlug(st.GitCommitMsg, st.UUID)
	}
	return opts.GitBranchPrefix + seg
}

func (e *Engine) git(ctx context.Context, args ...string) (string, error) {
	if e.Git != nil {
		return e.Git(ctx, e.Dir, args...)
	}
	return gitRunner(ctx, e.Dir, nil, args...)
}

func (e *Engine) autoBranch(ctx context.Context, st *State) (string, error) {
	name := BranchName(e.Opts, st)
	if _, err := e.git(ctx, "checkout", "-b", name); err != nil {
		return name, fmt.Errorf("create git branch %s: %w", name, err)
	}
	return name, nil
}

// ErrNoGitRepo is a project directory outside any git work tree: relay applies there, but
// relay git commit and autoGitBranch need a repository.
var ErrNoGitRepo = errors.New("not in a git repository")

// CheckGitRepo reports whether dir is inside a git work tree: nil when it is, ErrNoGitRepo
// (wrapped with git's words) when it is not, another error when git cannot be run.
func CheckGitRepo(ctx context.Context, dir string) error {
	_, err := gitRunner(ctx, dir, nil, "rev-parse", "--git-dir")
	var ee *run.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s is %w", dir, ErrNoGitRepo)
	}
	return err
}

// ErrNothingToCommit is GitCommit finding nothing staged (already committed, or reverted).
var ErrNothingToCommit = errors.New("nothing to commit")

// CommitOptions controls GitCommit.
type CommitOptions struct {
	// All stages everything (git add .) instead of the transaction's files.
	All bool
}

// GitCommit stages the files of a committed transaction and commits them
// with its gitCommitMsg, kept intact (multi-line messages go through -F -).
// It returns git's summary line.
func GitCommit(ctx context.Context, projectDir string, st *State, opts CommitOptions) (string, error) {
	msg := strings.TrimSpace(st.GitCommitMsg)
	if msg == "" {
		return "", fmt.Errorf("transaction %s has no gitCommitMsg; commit it yourself with git commit -m \"…\"", st.UUID)
	}
	if err := CheckGitRepo(ctx, projectDir); err != nil {
		return "", fmt.Errorf("%s is not a git repository; run git init first: %w", projectDir, err)
	}
	if opts.All {
		if _, err := personGit(ctx, projectDir, nil, "add", "."); err != nil {
			return "", fmt.Errorf("git add: %w", err)
		}
	} else {
		paths := st.TouchedPaths()
		if len(paths) == 0 {
			return "", errors.New("the transaction touched no files")
		}
		var present, gone []string
		for _, p := range paths {
			if _, err := os.Lstat(filepath.Join(projectDir, filepath.FromSlash(p))); err == nil {
				present = append(present, p)
			} else {
				gone = append(gone, p)
			}
		}
		if len(present) > 0 {
			args := append([]string{"--literal-pathspecs", "add", "--"}, present...)
			if _, err := personGit(ctx, projectDir, nil, args...); err != nil {
				return "", fmt.Errorf("git add: %w", err)
			}
		}
		if len(gone) > 0 {
			args := append([]string{"--literal-pathspecs", "rm", "--cached", "--ignore-unmatch", "-q", "--"}, gone...)
			if _, err := personGit(ctx, projectDir, nil, args...); err != nil {
				return "", fmt.Errorf("git rm: %w", err)
			}
		}
	}
	if _, err := personGit(ctx, projectDir, nil, "diff", "--cached", "--quiet"); err == nil {
		if opts.All {
			return "", fmt.Errorf("%w: the working tree has no changes since the last commit", ErrNothingToCommit)
		}
		return "", fmt.Errorf("%w: the transaction's files (%s) have no changes since the last commit", ErrNothingToCommit, strings.Join(st.TouchedPaths(), ", "))
	}
	out, err := personGit(ctx, projectDir, []byte(msg+"\n"), "commit", "--cleanup=verbatim", "-F", "-")
	if err != nil {
		return "", fmt.Errorf("git commit: %w", err)
	}
	return strings.TrimSpace(firstLine(out)), nil
}

// TouchedPaths are the project paths the transaction changed, sorted.
func (s *State) TouchedPaths() []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
		if f.From != "" {
			out = append(out, f.From)
		}
	}
	if len(out) == 0 {
		for p := range s.Snapshot {
			out = append(out, p)
		}
	}
	return sortUnique(out)
}
