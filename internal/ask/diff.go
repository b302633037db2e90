package ask

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/relaydev/relay/internal/run"
)

// collectDiff runs git only when asked: --include-diff gives the
// unstaged `git diff`; --diff-base REF gives REF...HEAD plus everything not
// yet committed (staged and unstaged), for a review of a whole branch.
func (a *Asker) collectDiff(ctx context.Context, repo string, req Request) (string, error) {
	var parts []string
	switch {
	case req.DiffBase != "":
		// a ref starting with "-" would reach git as an option (e.g. --output=FILE writes a file)
		if strings.HasPrefix(req.DiffBase, "-") {
			return "", usagef("pass a branch, tag or commit to --diff-base, e.g. --diff-base main", "Invalid diff base: %s (a git ref cannot start with '-')", req.DiffBase)
		}
		branch, err := a.Git(ctx, repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", req.DiffBase+"...HEAD", "--")
		if err != nil {
			return "", diffError(err, "check that "+req.DiffBase+" exists: git -C "+repo+" rev-parse "+req.DiffBase)
		}
		uncommitted, err := a.Git(ctx, repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD", "--")
		if err != nil {
			return "", diffError(err, "check that "+repo+" is a git repository with at least one commit")
		}
		parts = append(parts, strings.TrimSpace(branch), strings.TrimSpace(uncommitted))
	case req.Review:
		// every change not yet committed, staged or not
		out, err := a.Git(ctx, repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD", "--")
		if err != nil {
			return "", diffError(err, "check that "+repo+" is a git repository with at least one commit")
		}
		parts = append(parts, strings.TrimSpace(out))
	case req.IncludeDiff:
		out, err := a.Git(ctx, repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--")
		if err != nil {
			return "", diffError(err, "check that "+repo+" is a git repository: git -C "+repo+" status")
		}
		parts = append(parts, strings.TrimSpace(out))
	default:
		return "", nil
	}
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	diff := strings.Join(nonEmpty, "\n")
	if n := len(diff); n > MaxDiffBytes {
		return "", tooLarge("Git diff", n, MaxDiffBytes)
	}
	return diff, nil
}

// gitError carries git's own explanation (stderr, else stdout).
type gitError struct{ detail string }

func (e *gitError) Error() string { return e.detail }

func diffError(err error, hint string) *Error {
	return errorf(hint, "Failed to collect git diff: %s", err.Error())
}

// runGit is the real git seam: `git -C repo args…`, stdout captured.
func runGit(ctx context.Context, repo string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	c := run.Git(ctx, repo, args...)
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	if err == nil {
		return stdout.String(), nil
	}
	var nf *run.NotFoundError
	if errors.As(err, &nf) {
		return "", &gitError{"git not found in PATH"}
	}
	detail := strings.TrimSpace(stderr.String())
	if detail == "" {
		detail = strings.TrimSpace(stdout.String())
	}
	if detail == "" {
		detail = "git diff failed"
	}
	return "", &gitError{detail}
}
