package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/mcp"
)

// relay mcp is the agents' front door: internal/mcp serves the protocol and runs every
// tool call through a workspace, as the other commands do for a person.

func newCmdMCP(f *Factory) *cobra.Command {
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp [--http [ADDR]]",
		Short: "Serve relay's tools to an agent host over MCP (stdio, or HTTP with --http)",
		Long: `Run relay as a Model Context Protocol server on stdin/stdout, for agent hosts
(Claude Code, Codex, Gemini CLI, Qwen Code; register it with relay install).

Tools: ask (other agent CLIs), apply (file changes as revertable transactions),
memory (the daemon's threads, state and artifacts). Artifacts are resources
relay://<thread>/artifacts/<ref>. The memory daemon is started when it is not
running, as relay up does. The thread defaults to $RELAY_THREAD, else one
thread per project, remembered in .relaycode/thread.

With --http the same server answers over Streamable HTTP at
http://ADDR/mcp (default 127.0.0.1 on a free port, printed on stderr).
Every request needs Authorization: Bearer <token>, the token of
$RELAY_HOME/config.json that the memory daemon uses; a non-loopback ADDR
is served only when you name it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("http") {
				addr := httpAddr
				if len(args) == 1 { // --http ADDR: pflag leaves an optional value as an argument
					if addr != mcpHTTPDefault {
						return Usagef("two addresses: --http=%s and %s; give one", addr, args[0])
					}
					addr = args[0]
				}
				return mcpServeHTTP(cmd.Context(), f, mcpOptions(f), addr)
			}
			if len(args) > 0 {
				return Usagef("relay mcp takes no arguments (got %q); to serve over HTTP: relay mcp --http %s", args[0], args[0])
			}
			// the host logs stderr: the person can see which directory the agent's calls act on
			fmt.Fprintf(f.IO.ErrOut, "relay mcp: %s\n", mcpServes(f))
			collectLess(f.Getenv)
			return mcp.Serve(cmd.Context(), mcpOptions(f))
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve over Streamable HTTP at ADDR/mcp instead of stdio (default "+mcpHTTPDefault+"; needs the API token)")
	cmd.Flags().Lookup("http").NoOptDefVal = mcpHTTPDefault
	return cmd
}

// mcpGCPercent is relay mcp's collector target (GOGC). The session's live heap is about a
// megabyte while the MCP SDK's JSON decoding allocates tens of kilobytes a message, so at
// Go's default of 100 the collector ran every few calls: a sixth of the process's CPU
// under a stream of searches. At 200 the process took a fifth less CPU a search for 4 MB
// more at its peak (24 -> 28 MB); 400 saved about as much and cost 12 MB.
const mcpGCPercent = 200

// collectLess sets mcpGCPercent unless the user set GOGC. It is process-wide, so only the
// stdio server's command calls it (the process is the session's).
func collectLess(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(mcpGCPercent)
	}
}

// mcpOptions is what relay mcp serves, on stdio or over HTTP.
func mcpOptions(f *Factory) mcp.Options {
	return mcp.Options{In: f.IO.In, Out: f.IO.Out, ErrOut: f.IO.ErrOut,
		WorkDir: f.WorkDir, Home: f.Home, Getenv: f.Getenv, Environ: os.Environ, Version: f.Version,
		StartDaemon: func(ctx context.Context) error {
			return upRun(ctx, &UpOptions{F: quietFactory(f), Host: "127.0.0.1", Wait: 15 * time.Second})
		}}
}

// quietFactory is f with stdout sent to stderr: in an MCP session stdout
// belongs to the protocol, and relay up prints the daemon's URL there.
func quietFactory(f *Factory) *Factory {
	q := *f
	ios := *f.IO
	ios.Out = f.IO.ErrOut // stdout carries the protocol: nothing else may write there
	ios.In = strings.NewReader("")
	ios.SetTTY(false, false, false)
	q.IO = &ios
	return &q
}

// mcpServes says which project relay mcp started in the working directory
// serves: its root and config, or why there is none.
func mcpServes(f *Factory) string {
	wd, err := f.WorkDir()
	if err != nil {
		return "no working directory: " + err.Error()
	}
	file, err := config.Find(wd)
	switch {
	case err == nil:
		return fmt.Sprintf("serving project %s (config %s)", filepath.Dir(file), file)
	case config.IsNotOwned(err):
		return fmt.Sprintf("serving %s without a project config: %v", wd, err)
	}
	return fmt.Sprintf("serving %s (no relaycode.config.json here or up to the git work tree's root: apply needs relay init)", wd)
}
