package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update", false, "rewrite testscript golden files from actual output")

// scriptCmds are custom testscript commands; test files of each capability
// add theirs in an init function.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"perm": cmdPerm,
}

// scriptSetups prepare each script's environment after the common setup.
var scriptSetups []func(env *testscript.Env) error

func TestMain(m *testing.M) {
	// Scripts run `relay` as this test binary re-executed, so it is the real
	// command tree (and can be killed, backgrounded, raced).
	testscript.Main(stopServers{m}, map[string]func(){
		"relay": func() { os.Exit(Main()) },
	})
}

// stopServers stops the PostgreSQL server of the team scripts, if one was started, after
// the tests and before testscript exits.
type stopServers struct{ m *testing.M }

func (s stopServers) Run() int {
	defer pgtest.Stop()
	return s.m.Run()
}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		Cmds:                scriptCmds,
		UpdateScripts:       *updateScripts,
		RequireExplicitExec: true,
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".home")
			env.Setenv("HOME", home)
			env.Setenv("RELAY_HOME", filepath.Join(home, ".relay"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GIT_AUTHOR_NAME", "relay test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@relay.invalid")
			env.Setenv("GIT_COMMITTER_NAME", "relay test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@relay.invalid")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			if dir := corpus.Find("corpus"); dir != "" {
				env.Setenv("CORPUS", dir)
			}
			for _, s := range scriptSetups {
				if err := s(env); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// cmdPerm checks a file's permission bits: perm FILE 0600.
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm FILE MODE")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	if err != nil {
		ts.Fatalf("bad mode %q", args[1])
	}
	st, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := uint64(st.Mode().Perm())
	if (got == want) == neg {
		ts.Fatalf("%s has mode %#o, want %s%#o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}
