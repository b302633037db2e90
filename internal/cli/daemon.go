package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/workspace"
)

// exitNotRunning is `relay status`'s exit code when no daemon runs (as systemctl status).
const exitNotRunning = 3

// addMemoryCommands registers the memory-daemon command tree.
func addMemoryCommands(root *cobra.Command, f *Factory) {
	root.AddCommand(newCmdUp(f), newCmdDown(f), newCmdStatus(f),
		newCmdThread(f), newCmdRuns(f), newCmdShow(f), newCmdTail(f),
		newCmdState(f), newCmdArtifact(f))
}

// memoryClient returns a client for the daemon of $RELAY_HOME.
func memoryClient(f *Factory) (*client.Client, error) {
	return (&workspace.Memory{Home: f.Home, Getenv: f.Getenv}).Dial()
}

// apiErr marks a daemon error with the thread it was about, for its next step
// (workspace.Explain).
func apiErr(err error, threadID string) error { return workspace.MemoryError(err, threadID) }

// UpOptions are the inputs of `relay up`.
type UpOptions struct {
	F          *Factory
	Port       int
	Host       string
	Foreground bool
	JSON       bool
	NoAuth     bool
	Wait       time.Duration
	// Store and Artifacts override RELAY_STORE / RELAY_ARTIFACTS and config.json's store.
	Store     string
	Artifacts string
}

func newCmdUp(f *Factory) *cobra.Command {
	opts := &UpOptions{F: f, Wait: 15 * time.Second}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the memory daemon in the background",
		Long: `Start the relay memory daemon (default http://127.0.0.1:7474).

It runs in the background: pid in $RELAY_HOME/daemon.pid, log in $RELAY_HOME/daemon.log,
address in $RELAY_HOME/daemon.json. When the port is taken the next free one is used
and recorded, so every relay command and SDK finds it. --foreground runs it in this
terminal until Ctrl-C.

The store is SQLite in $RELAY_HOME unless --store (or RELAY_STORE, or "store": {"url": …}
in $RELAY_HOME/config.json) names a shared PostgreSQL database, postgres://user@host/db;
any number of daemons on any machines can serve the same database. --artifacts
s3://bucket/prefix?endpoint=host:port (or RELAY_ARTIFACTS, or store.artifacts) keeps
artifact bodies in an S3-compatible bucket, credentials from AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY. See docs/team.md.

The daemon never serves without an API token: one is created in
$RELAY_HOME/config.json (mode 0600) when missing. --no-auth turns the token off,
and only on a loopback address; relay doctor then reports it as a failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("port") {
				opts.Port = 0
			}
			return upRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Port, "port", relayhome.DefaultPort, "preferred port (the next free one is used when taken; default from config.json)")
	cmd.Flags().StringVar(&opts.Host, "host", "127.0.0.1", "address to listen on (every request needs the API token)")
	cmd.Flags().BoolVar(&opts.NoAuth, "no-auth", false, "serve without the API token (loopback addresses only; any local process can then read and change your memory)")
	cmd.Flags().BoolVar(&opts.Foreground, "foreground", false, "run in this terminal instead of the background")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the daemon's address as JSON")
	cmd.Flags().StringVar(&opts.Store, "store", "", "store URL: sqlite:// (default, in $RELAY_HOME) or postgres://user@host/db (shared by several daemons)")
	cmd.Flags().StringVar(&opts.Artifacts, "artifacts", "", "where artifact bodies go: s3://bucket/prefix?endpoint=host:port (default: in the store)")
	return cmd
}

func upRun(ctx context.Context, opts *UpOptions) error {
	f := opts.F
	home, err := f.Home()
	if err != nil {
		return err
	}
	if opts.NoAuth && !relayhome.IsLoopbackHost(opts.Host) {
		return Usagef("--no-auth is refused on --host %s: without a token anyone who can reach that address can read and change your memory; drop --no-auth, or listen on 127.0.0.1", opts.Host)
	}
	u, created, err := relayhome.EnsureToken(home)
	if err != nil {
		return WithHint(err, "relay init")
	}
	if created && !opts.Foreground {
		fmt.Fprintf(f.IO.ErrOut, "created an API token in %s (mode 0600); relay commands and the SDKs read it from there\n", relayhome.UserFile(home))
	}
	dc, err := loadDaemonConfig(f.Getenv, u)
	if err != nil {
		return err
	}
	if opts.Store != "" {
		if _, err := backend.Kind(opts.Store); err != nil {
			return Usagef("--store: %v", err)
		}
		dc.Store = opts.Store
	}
	if opts.Artifacts != "" {
		dc.Artifacts = opts.Artifacts
	}
	token := u.Token
	if opts.NoAuth {
		token = ""
		if !opts.Foreground {
			warnNoAuth(f.IO.ErrOut)
		}
	}
	port := opts.Port
	if port == 0 {
		port = u.Port
	}
	if port < 1 || port > 65535 {
		return Usagef("--port %d is not a TCP port (1-65535)", port)
	}
	if opts.Foreground {
		return upForeground(ctx, opts, home, port, token, dc)
	}
	if pid, _ := relayhome.LockHolder(home); pid != 0 {
		if info, err := relayhome.ReadInfo(home); err == nil {
			fmt.Fprintf(f.IO.ErrOut, "relay daemon already running (pid %d)\n", pid)
			return printUp(f.IO, opts.JSON, info)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the relay binary to start the daemon: %w", err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	logPath := filepath.Join(home, relayhome.LogFile)
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	args := []string{"up", "--foreground", "--port", strconv.Itoa(port), "--host", opts.Host}
	if opts.NoAuth {
		args = append(args, "--no-auth")
	}
	child := exec.Command(exe, args...)
	// The store URL may carry a password: it goes to the child in its environment, never on
	// a command line that ps shows.
	child.Env = append(os.Environ(), "RELAY_STORE="+dc.Store, "RELAY_ARTIFACTS="+dc.Artifacts)
	child.Stdin = nil // /dev/null: a daemon never reads the terminal
	child.Stdout, child.Stderr = logf, logf
	child.SysProcAttr = run.Detached()
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.NewTimer(opts.Wait)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return WithHint(fmt.Errorf("the daemon exited at start (%v): %s", err, logTail(logPath, start)), "relay doctor")
		case <-deadline.C:
			_ = child.Process.Signal(syscall.SIGTERM)
			return WithHint(fmt.Errorf("the daemon did not become ready within %s: %s", opts.Wait, logTail(logPath, start)), "relay doctor")
		case <-ctx.Done():
			_ = child.Process.Signal(syscall.SIGTERM)
			return ctx.Err()
		case <-tick.C:
			info, err := relayhome.ReadInfo(home)
			if err != nil || info.PID != child.Process.Pid {
				continue
			}
			c := &client.Client{BaseURL: info.URL, Token: u.Token, HTTP: shortHTTP()}
			if c.Health(ctx) != nil {
				continue
			}
			_ = child.Process.Release()
			fmt.Fprintf(f.IO.ErrOut, "relay daemon started (pid %d, log %s)\n", info.PID, logPath)
			if info.Port != port {
				fmt.Fprintf(f.IO.ErrOut, "port %d was taken; using %d\n", port, info.Port)
			}
			return printUp(f.IO, opts.JSON, info)
		}
	}
}

func printUp(io *iostreams.IOStreams, asJSON bool, info relayhome.Info) error {
	if asJSON {
		return writeJSON(io.Out, info)
	}
	_, err := fmt.Fprintf(io.Out, "url: %s\n", info.URL)
	return err
}

// logTail returns what the daemon logged since offset, last lines only.
func logTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return "see " + path
	}
	lines := strings.Split(strings.TrimSpace(string(b[offset:])), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s := strings.TrimSpace(strings.Join(lines, "\n"))
	if s == "" {
		return "nothing logged; see " + path
	}
	return s
}

func upForeground(ctx context.Context, opts *UpOptions, home string, port int, token string, dc daemonConfig) error {
	if opts.NoAuth {
		warnNoAuth(opts.F.IO.ErrOut)
	}
	server.LimitMemory()
	err := server.Run(ctx, server.RunOptions{Home: home, Host: opts.Host, Port: port, Token: token, NoAuth: opts.NoAuth, Version: opts.F.Version,
		LogLevel: dc.LogLevel, Sync: dc.Sync, Mirror: dc.Mirror, Capabilities: dc.Capabilities, Store: dc.Store, Artifacts: dc.Artifacts, ArtifactsGC: dc.ArtifactsGC, Ready: func(info relayhome.Info) {
			fmt.Fprintf(opts.F.IO.ErrOut, "relay daemon listening on %s (Ctrl-C stops it)\n", info.URL)
		}})
	if errors.Is(err, server.ErrAlreadyRunning) {
		return WithHint(err, "relay status")
	}
	if err != nil {
		return WithHint(err, "relay doctor")
	}
	return nil
}

// shortHTTP is for liveness probes, which must not hang on a wedged daemon.
func shortHTTP() *http.Client { return &http.Client{Timeout: 3 * time.Second} }

// DownOptions are the inputs of `relay down`.
type DownOptions struct {
	F    *Factory
	Wait time.Duration
}

func newCmdDown(f *Factory) *cobra.Command {
	opts := &DownOptions{F: f, Wait: 15 * time.Second}
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the memory daemon gracefully",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return downRun(cmd.Context(), opts)
		},
	}
}

func downRun(ctx context.Context, opts *DownOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	pid, err := relayhome.LockHolder(home)
	if err != nil {
		return err
	}
	if pid == 0 {
		// Files left by a crash are stale: nobody holds the lock.
		os.Remove(filepath.Join(home, relayhome.InfoFile))
		os.Remove(filepath.Join(home, relayhome.PIDFile))
		fmt.Fprintln(opts.F.IO.ErrOut, "relay daemon is not running")
		return nil
	}
	if err := terminate(pid); err != nil {
		return fmt.Errorf("stop the daemon (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(opts.Wait)
	for time.Now().Before(deadline) {
		if p, _ := relayhome.LockHolder(home); p != pid {
			fmt.Fprintf(opts.F.IO.ErrOut, "relay daemon stopped (pid %d)\n", pid)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return WithHint(fmt.Errorf("the daemon (pid %d) did not stop within %s", pid, opts.Wait), fmt.Sprintf("kill -9 %d (committed data is safe)", pid))
}

// StatusOptions are the inputs of `relay status`.
type StatusOptions struct {
	F    *Factory
	JSON bool
}

func newCmdStatus(f *Factory) *cobra.Command {
	opts := &StatusOptions{F: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the memory daemon runs, its url, version, uptime and store size",
		Long:  "Show the memory daemon's state. Exits 3 when it is not running.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return statusRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	c, err := memoryClient(opts.F)
	if err != nil {
		return err
	}
	c.HTTP = shortHTTP()
	// Without RELAY_URL the client only talks to the daemon holding this RELAY_HOME.
	st, err := c.Status(ctx)
	if err != nil {
		var ue *client.UnreachableError
		if !errors.As(err, &ue) {
			return apiErr(err, "")
		}
		if opts.JSON {
			writeJSON(opts.F.IO.Out, map[string]any{"running": false, "url": c.BaseURL})
		} else {
			fmt.Fprintln(opts.F.IO.Out, "relay daemon: not running")
			fmt.Fprintln(opts.F.IO.ErrOut, "Try: relay up")
		}
		return ExitCode(exitNotRunning, ErrSilent)
	}
	if opts.JSON {
		out := map[string]any{"running": true, "url": st.URL, "version": st.Version, "pid": st.PID,
			"started_at": st.StartedAt, "uptime_seconds": st.UptimeSeconds, "auth": st.Auth, "store": st.Store, "mirror_error": st.MirrorError}
		if st.StoreError != "" {
			out["store_error"] = st.StoreError
		}
		if st.Listen != nil {
			out["listen"] = st.Listen
		}
		return writeJSON(opts.F.IO.Out, out)
	}
	w := opts.F.IO.Out
	fmt.Fprintf(w, "relay daemon: running\n")
	fmt.Fprintf(w, "url:      %s\n", st.URL)
	fmt.Fprintf(w, "version:  %s\n", st.Version)
	fmt.Fprintf(w, "pid:      %d\n", st.PID)
	fmt.Fprintf(w, "uptime:   %s\n", (time.Duration(st.UptimeSeconds * float64(time.Second))).Round(time.Second))
	if st.StoreError != "" {
		fmt.Fprintf(w, "store:    %s (not answering)\n", st.Store.Path)
		fmt.Fprintf(opts.F.IO.ErrOut, "Warning: %s\nTry: relay doctor (requests get 503 and Retry-After until it is back)\n", st.StoreError)
	} else {
		fmt.Fprintf(w, "store:    %s (%s, %d threads, %d artifacts, %d events)\n", st.Store.Path, humanBytes(st.Store.Bytes), st.Store.Threads, st.Store.Artifacts, st.Store.Events)
	}
	if l := st.Listen; l != nil && l.Connected {
		fmt.Fprintf(w, "events:   hears the other daemons' events (connected %s", l.Since)
		if l.Reconnects > 0 {
			fmt.Fprintf(w, ", reconnected %d times", l.Reconnects)
		}
		fmt.Fprintln(w, ")")
	} else if l != nil {
		fmt.Fprintf(w, "events:   not hearing the other daemons' events since %s (reconnecting)\n", l.Since)
	}
	if st.MirrorError != "" {
		fmt.Fprintf(opts.F.IO.ErrOut, "Warning: the human-readable mirror failed: %s\n", st.MirrorError)
	}
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// threadClient connects to the daemon and resolves a thread argument (id,
// id prefix or name): the first step of every thread-scoped command. A full
// id costs no lookup.
func threadClient(ctx context.Context, f *Factory, arg string) (*client.Client, string, error) {
	c, err := memoryClient(f)
	if err != nil {
		return nil, "", err
	}
	if _, err := uuid.Parse(arg); err == nil && len(arg) == 36 {
		return c, arg, nil
	}
	id, err := workspace.ResolveThread(ctx, c, arg)
	if err != nil {
		return nil, "", err
	}
	return c, id, nil
}

// warnNoAuth says what --no-auth gives away.
func warnNoAuth(w io.Writer) {
	fmt.Fprintln(w, "Warning: --no-auth: the daemon serves without its API token; any process or user on this machine can read and change your memory (relay doctor reports this)")
}
