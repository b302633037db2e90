package run

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Git prepares a git command relay runs for itself (listing tracked files,
// a diff for a friend, a branch for a transaction) in dir. A repository's
// .git/config can name commands git runs on its own: an unpacked archive
// carries its .git/config, so relay turns each such command off for its own
// calls: the fsmonitor hook, every hook (core.hooksPath to nowhere), and the
// clean/smudge filter drivers the repository configures (git would run them
// to compare the work tree). Diffs take --no-ext-diff --no-textconv at the
// call. Commands a person asked for by name (relay git commit) keep the
// repository's hooks, as git commit would.
func Git(ctx context.Context, dir string, args ...string) *Cmd {
	return gitCmd(ctx, dir, true, args)
}

// GitWithHooks is Git for a command the person asked for by name: hooks run
// as with git itself; fsmonitor and filter drivers are still off.
func GitWithHooks(ctx context.Context, dir string, args ...string) *Cmd {
	return gitCmd(ctx, dir, false, args)
}

// gitCmd passes the settings in the environment (GIT_CONFIG_COUNT, git
// 2.31+), where a driver name holding "=" cannot split a -c option.
func gitCmd(ctx context.Context, dir string, noHooks bool, args []string) *Cmd {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	set := [][2]string{{"core.fsmonitor", "false"}}
	if noHooks {
		set = append(set, [2]string{"core.hooksPath", "/dev/null"})
	}
	for _, d := range filterDrivers(ctx, dir) {
		for _, v := range []string{"clean", "smudge", "process"} {
			set = append(set, [2]string{"filter." + d + "." + v, ""})
		}
	}
	env := os.Environ()
	n := 0
	if c, err := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT")); err == nil && c > 0 {
		n = c // keep the caller's own settings; ours come after them and win
	}
	for _, kv := range set {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
		n++
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	c := Command(ctx, "git", args...)
	c.Env = env
	return c
}

// filterDrivers names the filter drivers git's configuration defines for
// dir (reading the configuration runs nothing).
func filterDrivers(ctx context.Context, dir string) []string {
	args := []string{"config", "-z", "--name-only", "--get-regexp", `^filter\.`}
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := Command(ctx, "git", args...).Output()
	if err != nil {
		return nil // exit 1: no filter configured (or no git: the real call says so)
	}
	seen := map[string]bool{}
	var names []string
	for _, key := range strings.Split(string(out), "\x00") {
		// filter.<name>.<var>; the name may itself hold dots
		rest, ok := strings.CutPrefix(key, "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		name := rest[:i]
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}
