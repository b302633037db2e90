// Package cli is relay's command tree. Each command is an Options struct
// plus a run function, so it can be tested without a process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/run"
)

// version is set with -ldflags "-X github.com/relaydev/relay/internal/cli.version=v1.2.3";
// otherwise it comes from the module's build info.
var version = ""

// Version returns relay's version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Main runs relay with the process's arguments and returns its exit code.
func Main() int {
	ios := iostreams.System()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, ios, os.Args[1:])
}

// Run executes one relay command line against ios and returns the exit code.
func Run(ctx context.Context, ios *iostreams.IOStreams, args []string) int {
	if os.Getenv("RELAY_DEBUG") == "1" {
		run.SetTrace(ios.ErrOut)
		defer run.SetTrace(nil)
	}
	f := newFactory(ios, Version())
	root := NewRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	defer ios.Flush()
	if err == nil {
		return exitOK
	}
	code := printError(ios.ErrOut, err)
	// Every --json command fails with a JSON error object on stdout, unless it printed its
	// own (ErrSilent: the output says what went wrong; JSONShown: the error is in it).
	var shown *jsonShownError
	if wantsJSON(cmd, args) && !errors.Is(err, ErrSilent) && !errors.As(err, &shown) {
		_ = writeJSON(ios.Out, jsonError(err, code))
	}
	return code
}

// NewRootCmd builds the whole command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	var initFlag, forceFlag bool
	root := &cobra.Command{
		Use:   "relay",
		Short: "Relay prompts between coding agents, apply LLM answers safely, and keep agent memory",
		Long: `relay is one tool for people who code with LLM agents:

  apply   copy an LLM's answer; relay applies it as one transaction
          (relay init, relay watch, relay apply, relay log, relay revert)
  ask     one coding agent asks another agent CLI for a second opinion
          (relay ask, relay backends)
  memory  a local daemon where agents keep state and artifacts and pass references
          (relay up, relay thread, relay state, relay artifact)

` + ExitCodesDoc,
		Version:       f.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		// A transaction a crashed relay left pending is rolled back
		// the next time any relay command runs in the project, before anything else.
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if noRecovery(cmd) {
				return nil
			}
			return recoverWorkDir(f)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if initFlag {
				return initRun(cmd.Context(), &InitOptions{IO: f.IO, WorkDir: f.WorkDir, Home: f.Home, Force: forceFlag})
			}
			return cmd.Help()
		},
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetVersionTemplate("relay {{.Version}}\n")
	root.Flags().BoolVar(&initFlag, "init", false, "same as relay init")
	root.Flags().BoolVar(&forceFlag, "force", false, "with --init: overwrite an existing config")
	_ = root.Flags().MarkHidden("force")

	root.AddCommand(newCmdVersion(f))
	root.AddCommand(newCmdInit(f))
	root.AddCommand(newCmdPrompt(f))
	root.AddCommand(newCmdDoctor(f))
	root.AddCommand(newCmdConfig(f))
	root.AddCommand(newCmdAsk(f))
	root.AddCommand(newCmdBackends(f))
	addMemoryCommands(root, f)
	root.AddCommand(newCmdOpen(f))
	root.AddCommand(newCmdCap(f), newCmdStats(f), newCmdReport(f), newCmdExport(f), newCmdImport(f), newCmdMigrate(f))
	root.AddCommand(newCmdApply(f))
	root.AddCommand(newCmdWatch(f))
	root.AddCommand(newCmdLog(f))
	root.AddCommand(newCmdRevert(f))
	root.AddCommand(newCmdTrust(f))
	root.AddCommand(newCmdGit(f))
	root.AddCommand(newCmdPatch(f))
	root.AddCommand(newCmdMCP(f), newCmdInstall(f, false), newCmdInstall(f, true))

	groupCommands(root)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(newHelpCmd(root))
	// cobra adds its completion command only when it executes, after the wrapping below;
	// added now, an unknown shell is an error like any unknown command.
	root.InitDefaultCompletionCmd()
	wrapArgsAsUsage(root)
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = completionArgs
		}
	}
	return root
}

// completionArgs refuses a shell relay writes no completions for (cobra's own completion
// command printed its help and exited 0).
func completionArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var shells []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			shells = append(shells, c.Name())
		}
	}
	return WithHint(Usagef("relay completion has no shell %q; it writes completions for %s", args[0], strings.Join(shells, ", ")),
		"relay completion bash --help   (how to load them)")
}

// noRecovery reports whether cmd must run without crash recovery here: shell
// completion, the commands a user needs when a record is in the way (version,
// help, doctor, which explains the records instead), and apply and revert,
// which recover once themselves (apply under its transaction's lock).
func noRecovery(cmd *cobra.Command) bool {
	switch cmd.Name() {
	case "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd, "version", "help", "doctor", "apply", "revert":
		return true
	}
	return cmd.HasParent() && cmd.Parent().Name() == "completion"
}

// commandGroups sorts `relay --help` by the three jobs; commands not listed
// stay under "Additional Commands".
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"apply", "Apply LLM answers (relaycode):", []string{"init", "trust", "prompt", "watch", "apply", "patch", "log", "revert", "git"}},
	{"ask", "Ask another agent (phone a friend):", []string{"ask", "backends"}},
	{"memory", "Agent memory (the relay daemon):", []string{"up", "down", "status", "thread", "runs", "show", "tail", "open", "state", "artifact", "cap", "stats", "report", "export", "import"}},
	{"agents", "Agent hosts (MCP):", []string{"mcp", "install", "uninstall"}},
	{"setup", "Setup and diagnostics:", []string{"doctor", "config", "version"}},
}

func groupCommands(root *cobra.Command) {
	group := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, name := range g.commands {
			group[name] = g.id
		}
	}
	for _, c := range root.Commands() {
		if id, ok := group[c.Name()]; ok {
			c.GroupID = id
		}
	}
}

// wrapArgsAsUsage makes argument errors exit 2 in relay's words with a help hint, like
// flag errors (cobra returns them as plain errors in its own words); an unknown
// subcommand gets the closest names.
func wrapArgsAsUsage(c *cobra.Command) {
	if c.HasSubCommands() {
		// The root, or a group command, given an unknown subcommand.
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0], args[1:]...)
			}
			return nil
		}
		if c.RunE == nil && c.Run == nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	} else if c.Args != nil {
		orig := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				return argsError(cmd, err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgsAsUsage(sub)
	}
}

func newCmdVersion(f *Factory) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print relay's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if jsonOut {
				return writeJSON(f.IO.Out, map[string]string{"version": f.Version})
			}
			_, err := fmt.Fprintf(f.IO.Out, "relay %s\n", f.Version)
			return err
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")
	return cmd
}
