package txn

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/relaydev/relay/internal/run"
)

// ShellRunner runs script with sh -c in dir through relay's subprocess seam.
func ShellRunner(ctx context.Context, dir, script string) (CommandResult, error) {
	return shellRun(ctx, dir, script, nil)
}

// shellRun is ShellRunner with started (may be nil) receiving the command's
// process group before the script runs.
func shellRun(ctx context.Context, dir, script string, started func(run.Group) error) (CommandResult, error) {
	var out, errOut bytes.Buffer
	c := run.Shell(ctx, dir, script)
	c.Started = started
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	res := CommandResult{Stdout: out.String(), Stderr: errOut.String()}
	var exitErr *run.ExitError
	if errors.As(err, &exitErr) && exitErr.Code >= 0 && ctx.Err() == nil {
		res.ExitCode = exitErr.Code
		return res, nil
	}
	return res, err
}

// gitRunner runs git in dir, as relay runs it for itself (no hooks,
// fsmonitor or filter drivers from the repository), and returns its stdout.
func gitRunner(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	return runGit(run.Git(ctx, dir, args...), stdin)
}

// personGit is gitRunner for git commands the person asked for by name
// (relay git commit): the repository's hooks run, as with git itself.
func personGit(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	return runGit(run.GitWithHooks(ctx, dir, args...), stdin)
}

func runGit(c *run.Cmd, stdin []byte) (string, error) {
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	out, err := c.Output()
	// Some of git's refusals go to stdout ("nothing to commit, working tree clean"); without
	// them the error would say only "git exited with code 1".
	var ee *run.ExitError
	if errors.As(err, &ee) && strings.TrimSpace(ee.Stderr) == "" {
		ee.Stderr = string(out)
	}
	return string(out), err
}
