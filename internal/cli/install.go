package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/mcp"
	"github.com/relaydev/relay/internal/mcp/hosts"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/suggest"
	"github.com/relaydev/relay/internal/workspace"
)

// InstallOptions are the inputs of `relay install` and `relay uninstall`.
type InstallOptions struct {
	IO      *iostreams.IOStreams
	F       *Factory
	Hosts   []string
	Scope   string
	DryRun  bool
	Command string
	Remove  bool
	// AllowWrites lets the host run relay's write tools without asking too.
	AllowWrites bool
	// All is `relay install all`: the hosts installed on this machine (named ones are
	// written whether or not their host is installed).
	All bool
}

// unknownHost is the usage error for a host relay does not know, with the closest names.
func unknownHost(verb, name string) error {
	if s := suggest.Closest(name, append(append([]string{}, hosts.Names...), "all")); len(s) > 0 {
		tries := make([]string, len(s))
		for i, h := range s {
			tries[i] = "relay " + verb + " " + h
		}
		return WithHint(Usagef("unknown host %q; did you mean %s?", name, strings.Join(quoteAll(s), " or ")), strings.Join(tries, ", or "))
	}
	return WithHint(Usagef("unknown host %q; relay knows %s", name, strings.Join(hosts.Names, ", ")), "relay "+verb+" claude|codex|gemini|qwen|all")
}

func newCmdInstall(f *Factory, remove bool) *cobra.Command {
	opts := &InstallOptions{IO: f.IO, F: f, Remove: remove}
	verb, short := "install", "Register relay mcp in an agent host (claude, codex, gemini, qwen, all)"
	long := `Register ` + "`relay mcp`" + ` in each host's own configuration, the way that host documents it:

  claude   user: ~/.claude.json mcpServers.relay   project: .mcp.json
           plus the slash commands /relay-ask and /relay-apply (~/.claude/commands or .claude/commands)
  codex    user: ~/.codex/config.toml [mcp_servers.relay] ($CODEX_HOME)   project: .codex/config.toml
  gemini   user: ~/.gemini/settings.json mcpServers.relay   project: .gemini/settings.json
  qwen     user: ~/.qwen/settings.json mcpServers.relay     project: .qwen/settings.json

"all" means the hosts installed here (their command on PATH, or their settings directory);
the others are named and skipped. A host named on its own is written even when it is not
installed yet, with a note saying so.

Only relay's entry is written; every other byte of those files stays as it was. Running it
again changes nothing. --dry-run prints the change as a unified diff and writes nothing.
Approval, per tool where the host has it: relay's read-only tool (read: memory, state,
search, the change log) runs without asking; the tools that write (write_memory, edit_files,
fetch, ask) are left to the host's own approval unless --allow-writes:
  claude   ~/.claude/settings.json permissions.allow: mcp__relay__read (+ the write tools)
  codex    [mcp_servers.relay.tools.read] approval_mode = "approve"
           (--allow-writes: default_tools_approval_mode = "approve")
  gemini   ~/.gemini/policies/relay.toml allows mcp_relay_read (--allow-writes: "trust": true)
  qwen     runs read by its readOnlyHint (--allow-writes: "trust": true)
--dry-run shows all of it.`
	if remove {
		verb, short = "uninstall", "Remove relay mcp from an agent host's configuration"
		long = `Remove relay's entry (and, for claude, the /relay-ask and /relay-apply commands relay
wrote) from each host's configuration. Everything else in those files stays byte for byte.`
	}
	cmd := &cobra.Command{
		Use:   verb + " claude|codex|gemini|qwen|all...",
		Short: short,
		Long:  long,
		Example: `  relay ` + verb + ` all
  relay ` + verb + ` claude --scope project
  relay ` + verb + ` codex --dry-run`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "all" {
					opts.All = true
					opts.Hosts = append(opts.Hosts, hosts.Names...)
					continue
				}
				if !contains(hosts.Names, a) {
					return unknownHost(verb, a)
				}
				opts.Hosts = append(opts.Hosts, a)
			}
			opts.Hosts = dedupeStrings(opts.Hosts)
			if opts.Scope != string(hosts.User) && opts.Scope != string(hosts.Project) {
				return WithHint(Usagef("--scope must be user or project, got %q", opts.Scope), "relay "+verb+" --help")
			}
			return installRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", "user", "user (your home directory) or project (this project's files)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the change as a unified diff; write nothing")
	if !remove {
		cmd.Flags().StringVar(&opts.Command, "command", "", "command the host runs (default: this relay binary's absolute path)")
		cmd.Flags().BoolVar(&opts.AllowWrites, "allow-writes", false, "let the host run relay's write tools (file edits, memory writes, fetch, ask) without asking")
	}
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func dedupeStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func hostEnv(f *Factory) (hosts.Env, error) {
	home := f.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return hosts.Env{}, WithHint(errors.New("cannot find your home directory"), "set HOME")
		}
		home = h
	}
	wd, err := f.WorkDir()
	if err != nil {
		return hosts.Env{}, err
	}
	return hosts.Env{Home: home, ProjectDir: workspace.ProjectDir(wd), Getenv: f.Getenv}, nil
}

// mcpServer is the command hosts run: this binary by absolute path (hosts
// start servers with their own PATH), plus the RELAY_* settings that must
// reach it (Codex passes servers only a short list of variables).
func mcpServer(f *Factory, command string) (hosts.Server, error) {
	if command == "" {
		exe, err := os.Executable()
		if err != nil {
			return hosts.Server{}, WithHint(fmt.Errorf("find the relay binary: %w", err), "relay install --command /path/to/relay")
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		command = exe
		if strings.Contains(exe, string(filepath.Separator)+"go-build") {
			fmt.Fprintf(f.IO.ErrOut, "Warning: %s is a temporary build (go run); hosts would lose it. Install relay (make install) or pass --command.\n", exe)
		}
	}
	srv := hosts.Server{Command: command, Args: []string{"mcp"}}
	for _, k := range []string{"RELAY_HOME", "RELAY_URL"} {
		if v := f.Getenv(k); v != "" {
			if srv.Env == nil {
				srv.Env = map[string]string{}
			}
			srv.Env[k] = v
		}
	}
	return srv, nil
}

func installRun(opts *InstallOptions) error {
	env, err := hostEnv(opts.F)
	if err != nil {
		return err
	}
	scope := hosts.Scope(opts.Scope)
	var srv hosts.Server
	if !opts.Remove {
		if srv, err = mcpServer(opts.F, opts.Command); err != nil {
			return err
		}
		srv.ReadTools, srv.WriteTools, srv.AllowWrites = mcp.ReadOnlyTools, mcp.WriteTools, opts.AllowWrites
	}
	targets, err := installTargets(opts, env)
	if err != nil {
		return err
	}
	for _, host := range targets {
		// A host may rewrite its file while relay edits it: relay reads it
		// again and redoes its edit (a few times, then gives up).
		for attempt := 1; ; attempt++ {
			err := installHost(opts, host, scope, env, srv)
			if errors.Is(err, hosts.ErrChanged) && attempt < 5 {
				continue
			}
			if err != nil {
				return WithHint(fmt.Errorf("%s: %w", host, err), "fix that file by hand (or move it away), then run relay "+verb(opts)+" "+host+" again")
			}
			break
		}
	}
	errOut := opts.IO.ErrOut
	if opts.DryRun {
		fmt.Fprintln(errOut, "Dry run: nothing was written.")
	}
	return nil
}

// installHost makes (or, with Remove, undoes) one host's registration.
func installHost(opts *InstallOptions, host string, scope hosts.Scope, env hosts.Env, srv hosts.Server) error {
	out, errOut := opts.IO.Out, opts.IO.ErrOut
	if !opts.DryRun {
		unlock, err := hosts.Lock(host, scope, env)
		if err != nil {
			return err
		}
		defer unlock()
	}
	var changes []hosts.Change
	var err error
	if opts.Remove {
		changes, err = hosts.Uninstall(host, scope, env)
	} else {
		changes, err = hosts.Install(host, scope, env, srv)
	}
	if err != nil {
		return err
	}
	path, _ := hosts.ConfigPath(host, scope, env)
	for _, c := range changes {
		if c.Skip {
			fmt.Fprintf(errOut, "%s: %s: %s\n", host, c.Note, c.Path)
		}
	}
	if len(changes) == 0 || allSkipped(changes) {
		if opts.Remove {
			fmt.Fprintf(errOut, "%s: relay is not registered in %s\n", host, path)
		} else {
			fmt.Fprintf(errOut, "%s: relay is already registered in %s\n", host, path)
		}
		return nil
	}
	for _, c := range changes {
		if c.Skip {
			continue
		}
		if opts.DryRun {
			fmt.Fprint(out, hosts.UnifiedDiff(c))
			continue
		}
		if err := hosts.WriteChange(c); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "%s: %s (%s)\n", host, c.Note, c.Path)
	}
	if !opts.Remove && !opts.DryRun {
		if hint := hostNote(host, scope); hint != "" {
			fmt.Fprintf(errOut, "%s: %s\n", host, hint)
		}
	}
	return nil
}

// installTargets picks the hosts to change and says which are not installed here: `install
// all` leaves those out, a host named on its own is written anyway (it finds relay once
// installed). Uninstall removes relay wherever it is registered.
func installTargets(opts *InstallOptions, env hosts.Env) ([]string, error) {
	if opts.Remove {
		return opts.Hosts, nil
	}
	var targets, missing []string
	for _, host := range opts.Hosts {
		d := hosts.Detect(host, env)
		switch {
		case d.Installed:
			targets = append(targets, host)
		case opts.All:
			missing = append(missing, host)
			fmt.Fprintf(opts.IO.ErrOut, "%s: not installed here (%s); skipped (relay install %s writes its config anyway)\n", host, d.Evidence, host)
		default:
			targets = append(targets, host)
			would := "writing"
			if opts.DryRun {
				would = "this would write"
			}
			fmt.Fprintf(opts.IO.ErrOut, "%s: not installed here (%s); %s its config for when it is\n", host, d.Evidence, would)
		}
	}
	if len(targets) == 0 {
		return nil, WithHint(fmt.Errorf("none of %s is installed here, so relay install all changes nothing", strings.Join(missing, ", ")),
			"install one (see relay doctor), or name it to write its config anyway: relay install claude")
	}
	return targets, nil
}

func allSkipped(cs []hosts.Change) bool {
	for _, c := range cs {
		if !c.Skip {
			return false
		}
	}
	return true
}

func verb(opts *InstallOptions) string {
	if opts.Remove {
		return "uninstall"
	}
	return "install"
}

func hostNote(host string, scope hosts.Scope) string {
	switch {
	case host == "claude":
		return "Claude Code runs relay's read tool without asking; it asks before the others (relay install claude --allow-writes allows them)"
	case host == "codex" && scope == hosts.Project:
		return `codex reads .codex/config.toml only in a trusted project ([projects."<dir>"] trust_level = "trusted" in ~/.codex/config.toml)`
	case host == "gemini" && scope == hosts.Project:
		return "Gemini CLI loads project servers only in a trusted folder"
	}
	return ""
}

// mcpDoctorChecks show, per host, whether relay mcp is registered and where.
func mcpDoctorChecks() []doctorCheck {
	var checks []doctorCheck
	for _, host := range hosts.Names {
		checks = append(checks, doctorCheck{Name: "mcp " + host, Run: func(ctx context.Context, f *Factory) checkResult {
			env, err := hostEnv(f)
			if err != nil {
				return checkResult{Status: statusWarn, Detail: err.Error()}
			}
			var where []string
			for _, r := range hosts.Status(host, env) {
				switch {
				case r.Error != "":
					return checkResult{Status: statusWarn, Detail: r.Path + ": " + r.Error, Hint: "fix that file, then relay install " + host}
				case r.Registered:
					where = append(where, fmt.Sprintf("%s (%s, runs %s)", r.Scope, r.Path, r.Command))
				}
			}
			if len(where) == 0 {
				return checkResult{Status: statusWarn, Detail: "relay is not registered", Hint: "relay install " + host}
			}
			detail := "registered: " + strings.Join(where, "; ")
			st, line := askHost(ctx, f, host)
			switch st {
			case hostConnected:
				return checkResult{Status: statusOK, Detail: detail + "; " + host + " mcp list: connected"}
			case hostFailed:
				return checkResult{Status: statusWarn, Detail: detail + "; " + host + " mcp list: failed: " + line,
					Hint: "run relay mcp by hand in this project to see why it does not start"}
			case hostNotLoaded:
				return checkResult{Status: statusWarn, Detail: detail + "; but " + host + " mcp list does not show relay",
					Hint: "relay install " + host + " again; for a project-scope entry, trust this folder in " + host}
			case hostNotInstalled:
				return checkResult{Status: statusOK, Detail: detail + "; " + host + " is not installed here"}
			}
			return checkResult{Status: statusOK, Detail: detail + "; " + host + " mcp list did not answer: " + line}
		}})
	}
	return checks
}

// What a host says about relay when asked.
const (
	hostUnknown = iota
	hostConnected
	hostFailed
	hostNotLoaded
	hostNotInstalled
)

// maxHostList bounds what relay reads of a host's `mcp list`.
const maxHostList = 64 << 10

// askHost runs the host's own `mcp list` (which starts every server it has, relay's too)
// and reads relay's line: the only way to know the host loaded relay, not just that a
// file names it.
func askHost(ctx context.Context, f *Factory, host string) (int, string) {
	exe, err := exec.LookPath(host)
	if err != nil {
		return hostNotInstalled, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := run.Command(ctx, exe, "mcp", "list")
	if host == "gemini" {
		// gemini lists servers of an untrusted folder as disabled, user ones too
		cmd.Env = append(os.Environ(), "GEMINI_CLI_TRUST_WORKSPACE=true")
	}
	if wd, err := f.WorkDir(); err == nil {
		cmd.Dir = wd
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return hostUnknown, "timed out after 20s"
	}
	if len(out) > maxHostList {
		out = out[:maxHostList]
	}
	return hostStatus(string(out), err)
}

// hostStatus reads relay's line in a host's `mcp list` output: claude prints
// "relay: CMD - ✓ Connected" or "✗ Failed to connect", gemini and qwen "relay … - Connected"
// or "Disconnected", codex a table row with its status.
func hostStatus(out string, runErr error) (int, string) {
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(iostreams.EscapeLine(line))
		words := strings.FieldsFunc(strings.ToLower(l), func(r rune) bool {
			return r == ' ' || r == '\t' || r == ':' || r == '|' || r == '│' || r == '✓' || r == '✗' || r == '●' || r == '○'
		})
		if len(words) == 0 || words[0] != hosts.ServerName {
			continue
		}
		low := strings.ToLower(l)
		switch {
		case strings.Contains(low, "disconnected"), strings.Contains(low, "fail"), strings.Contains(low, "✗"), strings.Contains(low, "error"), strings.Contains(low, "disabled"):
			return hostFailed, l
		case strings.Contains(low, "connected"), strings.Contains(low, "✓"), strings.Contains(low, "enabled"), strings.Contains(low, "ready"):
			return hostConnected, l
		}
		return hostUnknown, l
	}
	if runErr != nil {
		return hostUnknown, strings.TrimSpace(iostreams.EscapeLine(outputLine(out)))
	}
	return hostNotLoaded, ""
}

// outputLine is the first line of a command's output.
func outputLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
