package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/workspace"
)

// OpenOptions are the inputs of `relay open`.
type OpenOptions struct {
	IO        *iostreams.IOStreams
	Client    func() (*client.Client, error)
	Getenv    func(string) string
	Thread    string // id, id prefix or exact name; empty = the thread list
	NoBrowser bool
	JSON      bool
	// Browser opens a URL; nil = the system's browser (see openBrowser).
	Browser func(ctx context.Context, url string) error
}

func newCmdOpen(f *Factory) *cobra.Command {
	opts := &OpenOptions{IO: f.IO, Getenv: f.Getenv}
	cmd := &cobra.Command{
		Use:   "open [thread]",
		Short: "Open the web UI in a browser (prints the URL when there is none)",
		Long: `Open the daemon's web UI at /ui/: the thread list, or one thread's state, versions,
artifacts and live events. THREAD may be a thread id, a unique id prefix, or a thread name.

Without a browser (no display, an SSH session, or --no-browser) the URL is printed instead.
$BROWSER, when set, names the command that opens it.`,
		Example: `  relay open
  relay open 550e8400
  relay open my-first-run --no-browser`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Thread = args[0]
			}
			opts.Client = func() (*client.Client, error) { return memoryClient(f) }
			return openRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.NoBrowser, "no-browser", "n", false, "only print the URL")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print {url, thread_id, opened} as JSON")
	return cmd
}

func openRun(ctx context.Context, opts *OpenOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	if err := c.Health(ctx); err != nil {
		return apiErr(err, "")
	}
	target := strings.TrimRight(c.BaseURL, "/") + "/ui/"
	threadID := ""
	if opts.Thread != "" {
		threadID, err = workspace.ResolveThread(ctx, c, opts.Thread)
		if err != nil {
			return err
		}
		target += "#/t/" + url.PathEscape(threadID)
	}
	// Signed in, as Jupyter does: a one-time code in the fragment (which never reaches the
	// daemon's logs) that the UI trades for the token. An older daemon without the route
	// still gets a working link; the UI then asks for the token.
	signedIn := false
	plain := target // for "Opening …": the code need not linger in the terminal's scrollback
	if c.Token != "" {
		code, err := c.NewSigninCode(ctx)
		switch {
		case err == nil && code.Code != "":
			sep := "#"
			if threadID != "" {
				sep = "?"
			}
			target += sep + "code=" + url.QueryEscape(code.Code)
			signedIn = true
		case err != nil:
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
				return apiErr(err, "")
			}
		}
	}

	opened := false
	why := ""
	if !opts.NoBrowser {
		browser := opts.Browser
		if browser == nil {
			browser = func(ctx context.Context, u string) error { return openBrowser(ctx, u, opts.Getenv) }
		}
		if err := browser(ctx, target); err != nil {
			why = err.Error()
		} else {
			opened = true
		}
	}

	if opts.JSON {
		return writeJSON(opts.IO.Out, map[string]any{"url": target, "thread_id": threadID, "opened": opened})
	}
	switch {
	case opened:
		fmt.Fprintf(opts.IO.ErrOut, "Opening %s in your browser.\n", plain)
	case why != "":
		fmt.Fprintf(opts.IO.ErrOut, "Could not open a browser (%s); open this URL yourself:\n", why)
	}
	switch {
	case signedIn && !opened:
		fmt.Fprintf(opts.IO.ErrOut, "The link signs you in once, within %d seconds; after that the UI asks for the API token: the \"token\" in %s.\n", int(server.CodeTTL.Seconds()), c.TokenFrom)
	case c.Token != "" && !opened:
		fmt.Fprintf(opts.IO.ErrOut, "The UI asks once for the API token: the \"token\" in %s.\n", c.TokenFrom)
	}
	if !opened || !opts.IO.IsStdoutTTY() {
		fmt.Fprintln(opts.IO.Out, target)
	}
	return nil
}

// errNoBrowser means there is nothing to open a browser with; the URL is printed instead.
var errNoBrowser = errors.New("no browser available")

// browserCommand picks the command that opens u, or errNoBrowser.
func browserCommand(goos string, u string, getenv func(string) string, lookPath func(string) (string, error)) ([]string, error) {
	if b := strings.TrimSpace(getenv("BROWSER")); b != "" {
		// $BROWSER is a colon-separated list of commands; "%s" marks where the URL goes.
		for _, cand := range strings.Split(b, ":") {
			fields := strings.Fields(cand)
			if len(fields) == 0 {
				continue
			}
			if _, err := lookPath(fields[0]); err != nil {
				continue
			}
			if strings.Contains(cand, "%s") {
				for i := range fields {
					fields[i] = strings.ReplaceAll(fields[i], "%s", u)
				}
				return fields, nil
			}
			return append(fields, u), nil
		}
		return nil, fmt.Errorf("%w: none of $BROWSER (%s) is on PATH", errNoBrowser, b)
	}
	var cands [][]string
	switch goos {
	case "darwin":
		cands = [][]string{{"open", u}}
	case "windows":
		cands = [][]string{{"rundll32", "url.dll,FileProtocolHandler", u}}
	default:
		if getenv("WSL_DISTRO_NAME") != "" || getenv("WSL_INTEROP") != "" {
			cands = append(cands, []string{"wslview", u})
		}
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" && len(cands) == 0 {
			return nil, fmt.Errorf("%w: no graphical display ($DISPLAY and $WAYLAND_DISPLAY are unset)", errNoBrowser)
		}
		cands = append(cands, []string{"xdg-open", u}, []string{"x-www-browser", u}, []string{"sensible-browser", u})
	}
	for _, c := range cands {
		if _, err := lookPath(c[0]); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: %s not found on PATH", errNoBrowser, cands[0][0])
}

// openBrowser starts the browser command detached. It does not go through internal/run: the
// browser must outlive relay, and a timeout there would kill its whole process group.
func openBrowser(ctx context.Context, u string, getenv func(string) string) error {
	argv, err := browserCommand(runtime.GOOS, u, getenv, exec.LookPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdin = nil // /dev/null
	cmd.Stderr = &stderr
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Openers like xdg-open exit at once; a failure shows up within this window.
	select {
	case err := <-done:
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = err.Error()
			}
			return fmt.Errorf("%s: %s", argv[0], msg)
		}
		return nil
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Release()
		return nil
	case <-ctx.Done():
		_ = cmd.Process.Release()
		return nil
	}
}
