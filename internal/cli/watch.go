package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/apply/clipboard"
	"github.com/relaydev/relay/internal/apply/patch"
	"github.com/relaydev/relay/internal/apply/prompt"
	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/trust"
	"github.com/relaydev/relay/internal/workspace"
)

// WatchOptions are the inputs of `relay watch`.
type WatchOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	Yes    bool
	// NoPrompt skips printing the system prompt.
	NoPrompt bool
	// Env is the clipboard detection environment (replaced in tests).
	Env func() clipboard.Env
	// Home returns $RELAY_HOME, where the record key lives.
	Home func() (string, error)
	// Memory records transactions in the thread (nil: do not record); Thread is --thread.
	Memory *workspace.Memory
	Thread string
}

func newCmdWatch(f *Factory) *cobra.Command {
	opts := &WatchOptions{IO: f.IO, Config: f.ProjectConfig, Env: clipboard.System, Home: f.Home}
	cmd := &cobra.Command{
		Use:     "watch",
		Aliases: []string{"w"},
		Short:   "Watch the clipboard and apply every LLM response copied to it",
		Long: `Print the system prompt for your LLM, then watch the clipboard. Every new
valid response for this project is applied as a transaction (see relay apply);
anything else is reported in one line and ignored. An answer in another format
(a git diff, a codex patch, SEARCH/REPLACE blocks, edit JSON, whole files) has
no projectId: it is applied only when every file it changes exists here, or its
format says the file is new; copied code alone never writes a file. What was on
the clipboard before watch started is not applied.

Clipboard: clipboard.readCommand from the config, else wl-paste --watch on
Wayland, xclip or xsel on X11 (read when XFixes reports a clipboard change),
pbpaste on macOS, powershell.exe on Windows and WSL. Without change events the
clipboard is polled every watcher.clipboardPollInterval ms.
relay doctor shows which one is in use. The config is reloaded when it changes
(core.watchConfig). Ctrl-C finishes or rolls back the current transaction,
then exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Memory = f.memory()
			return watchRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Thread, "thread", "", "record every transaction in this memory thread (default $RELAY_THREAD, then the project's thread; skipped when none)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve every applied response without asking")
	cmd.Flags().BoolVar(&opts.NoPrompt, "no-prompt", false, "do not print the system prompt first")
	return cmd
}

// watchState is the config in force; the config watcher swaps it.
type watchState struct {
	mu      sync.Mutex
	cfg     *config.Config
	restart chan struct{}
}

func (s *watchState) get() *config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

func watchRun(ctx context.Context, opts *WatchOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	ios := opts.IO
	// One workspace for the whole watch: its thread is resolved once and a daemon that
	// is down is one warning, not one per response.
	ws := personWorkspace(ios, cfg, opts.Home, opts.Memory, opts.Thread)
	// The person at the terminal is asked once, up front, to trust a config that names commands.
	if err := ws.TrustConfig(ctx); err != nil {
		return err
	}
	// Fail before printing the long prompt when no clipboard can be read.
	if _, err := clipboard.Detect(opts.Env(), trustedReadCommand(opts.Home, cfg)); err != nil {
		return WithHint(err, "relay apply FILE   (apply a saved response without the clipboard); relay doctor")
	}
	if !opts.NoPrompt {
		text, err := prompt.System(cfg.ProjectID, cfg.Watcher.PreferredStrategy, detectLanguage(cfg.Dir))
		if err != nil {
			return err
		}
		fmt.Fprint(ios.Out, text)
	}
	st := &watchState{cfg: cfg, restart: make(chan struct{}, 1)}
	if cfg.Core.WatchConfig && cfg.File != "" {
		stop, err := watchConfigFile(ctx, ios, st)
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "Warning: cannot watch %s for changes (%v); restart relay watch after editing it.\n", cfg.File, err)
		} else {
			defer stop()
		}
	}
	for {
		cfg := st.get()
		tool, err := clipboard.Detect(opts.Env(), trustedReadCommand(opts.Home, cfg))
		if err != nil {
			return WithHint(err, "relay apply FILE   (apply a saved response without the clipboard); relay doctor")
		}
		interval := time.Duration(cfg.Watcher.ClipboardPollInterval) * time.Millisecond
		how := fmt.Sprintf("polling every %d ms", cfg.Watcher.ClipboardPollInterval)
		if len(tool.Watch) > 0 || tool.Notify != nil {
			how = "change events, no polling"
		}
		fmt.Fprintf(ios.ErrOut, "Watching the clipboard with %s (%s). Copy an LLM response to apply it; Ctrl-C to stop.\n", tool.Name, how)

		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-st.restart:
				cancel()
			case <-wctx.Done():
			}
		}()
		err = clipboard.Watch(wctx, tool, interval,
			func(text string) { watchHandle(ctx, opts, ws, st.get(), text) },
			func(err error) { fmt.Fprintf(ios.ErrOut, "Warning: %v\n", err) })
		cancel()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			fmt.Fprintln(ios.ErrOut, "Stopped watching.")
			return nil
		}
	}
}

// watchHandle runs one clipboard text through a transaction; nothing it
// finds ends the watch.
func watchHandle(ctx context.Context, opts *WatchOptions, ws *workspace.Workspace, cfg *config.Config, text string) {
	ios := opts.IO
	resp, err := patch.ParseAnswer(text, "")
	if err != nil {
		var np *patch.NotPatchError
		var cut *patch.CutOffError
		if errors.As(err, &cut) {
			fmt.Fprintf(ios.ErrOut, "Ignoring the clipboard: %v; copy the whole answer.\n", cut)
		} else if errors.As(err, &np) {
			fmt.Fprintf(ios.ErrOut, "Clipboard content is not an answer relay can apply (%s). Ignoring.\n", np.Reason)
		} else {
			fmt.Fprintf(ios.ErrOut, "Ignoring the clipboard: %v.\n", err)
		}
		return
	}
	if resp.Bare {
		// Without a control block nothing names the project: act only on an
		// answer that plainly edits this one (copied code alone never writes a file).
		if err := txn.CheckTargets(cfg.Dir, resp); err != nil {
			fmt.Fprintf(ios.ErrOut, "Ignoring a copied %s answer: %v.\n", resp.Format.Label(), err)
			return
		}
	} else if resp.Control.ProjectID != cfg.ProjectID {
		fmt.Fprintf(ios.ErrOut, "Ignoring a response for project '%s' (this is '%s').\n", resp.Control.ProjectID, cfg.ProjectID)
		return
	}
	fmt.Fprintf(ios.ErrOut, "New response detected for project '%s'.\n", cfg.ProjectID)
	ws.Config = cfg // the config in force, reloaded when its file changes
	out, err := ws.Apply(ctx, workspace.AnswerRequest{Response: resp, Op: "watch", Yes: opts.Yes})
	if err != nil {
		printError(ios.ErrOut, err)
	} else {
		printFormat(ios.Out, out.Answer)
		if err := printCommitted(ios, out.Result, false, out.Answer.Format); err != nil {
			fmt.Fprintf(ios.ErrOut, "Warning: %v\n", err)
		}
	}
	if ctx.Err() == nil {
		fmt.Fprintln(ios.ErrOut, "Watching for the next response...")
	}
}

// watchConfigFile reloads the config when its file changes (250 ms
// debounce); a change to how the clipboard is read restarts the watcher.
func watchConfigFile(ctx context.Context, ios *iostreams.IOStreams, st *watchState) (stop func(), err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	file := st.get().File
	// Watch the directory: editors replace files by renaming over them.
	if err := w.Add(filepath.Dir(file)); err != nil {
		w.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) != filepath.Clean(file) || ev.Op == fsnotify.Chmod {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(250 * time.Millisecond)
				} else {
					timer.Reset(250 * time.Millisecond)
				}
				fire = timer.C
			case <-fire:
				fire = nil
				old := st.get()
				cfg, warnings, err := config.Load(old.Dir)
				if err != nil {
					fmt.Fprintf(ios.ErrOut, "Config reload failed: %v (keeping the previous settings).\n", err)
					continue
				}
				for _, wmsg := range warnings {
					fmt.Fprintf(ios.ErrOut, "Warning: %s\n", wmsg)
				}
				st.mu.Lock()
				st.cfg = cfg
				st.mu.Unlock()
				fmt.Fprintf(ios.ErrOut, "Reloaded %s.\n", filepath.Base(cfg.File))
				if cfg.Watcher.ClipboardPollInterval != old.Watcher.ClipboardPollInterval || cfg.Clipboard.ReadCommand != old.Clipboard.ReadCommand {
					select {
					case st.restart <- struct{}{}:
					default:
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				fmt.Fprintf(ios.ErrOut, "Warning: config watcher: %v\n", err)
			}
		}
	}()
	return func() { w.Close(); <-done }, nil
}

// trustedReadCommand is cfg's clipboard.readCommand when the person trusts the config, else
// "" (the clipboard is then read the usual way; newEngine has said why).
func trustedReadCommand(home func() (string, error), cfg *config.Config) string {
	if cfg.Clipboard.ReadCommand == "" {
		return ""
	}
	h, err := home()
	if err != nil {
		return ""
	}
	d, err := trust.Open(h).Gate(cfg, nil)
	if err != nil || !d.Trusted {
		return ""
	}
	return cfg.Clipboard.ReadCommand
}

// clipboardDoctorChecks reports which clipboard reader relay watch would use.
func clipboardDoctorChecks() []doctorCheck {
	return []doctorCheck{{Name: "clipboard", Run: checkClipboard}}
}

func checkClipboard(ctx context.Context, f *Factory) checkResult {
	readCmd := ""
	if dir, err := f.WorkDir(); err == nil {
		if cfg, _, err := config.Load(dir); err == nil {
			readCmd = cfg.Clipboard.ReadCommand
		}
	}
	env := clipboard.System()
	env.Getenv = f.Getenv
	tool, err := clipboard.Detect(env, readCmd)
	if err != nil {
		var na *clipboard.NotAvailableError
		if errors.As(err, &na) {
			return checkResult{Status: statusWarn, Detail: "no clipboard reader for relay watch (" + joinTried(na.Tried) + ")", Hint: na.Hint}
		}
		return checkResult{Status: statusWarn, Detail: err.Error()}
	}
	mode := "polled"
	if len(tool.Watch) > 0 {
		mode = "change events"
	} else if tool.Notify != nil {
		mode = "X11 XFixes change events, polling if unavailable"
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := clipboard.ReadWith(rctx, tool); err != nil {
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s (%s) is selected but reading failed: %v", tool.Name, tool.Why, err),
			Hint: "check that the graphical session is reachable, or set clipboard.readCommand"}
	}
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("relay watch reads with %s (%s; %s)", tool.Name, tool.Why, mode)}
}

func joinTried(t []string) string {
	out := ""
	for i, s := range t {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}
