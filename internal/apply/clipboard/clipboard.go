// Package clipboard reads, writes and watches the system clipboard through
// the platform's tools: wl-paste/wl-copy on Wayland, xclip or xsel on X11,
// pbpaste/pbcopy on macOS, powershell.exe on Windows and WSL, or a command
// from the project config.
package clipboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// Tool is the clipboard reader relay uses, with how to run it.
type Tool struct {
	// Name is what `relay doctor` shows: wl-paste, xclip, xsel, pbpaste,
	// powershell.exe or readCommand.
	Name string
	// Read is the command that prints the clipboard.
	Read []string
	// Watch, when set, is a command that prints one line per clipboard
	// change (wl-paste --watch), so no polling is needed.
	Watch []string
	// Notify, when set, calls changed on every clipboard change until ctx
	// ends (X11 XFixes events); like Watch it replaces polling.
	Notify func(ctx context.Context, changed func()) error
	// Why says how it was chosen.
	Why string
}

// Env is what detection looks at; System() is the real one.
type Env struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	GOOS     string
	// WSL reports whether this Linux is Windows Subsystem for Linux.
	WSL bool
}

// System returns the process's environment for detection.
func System() Env {
	return Env{Getenv: os.Getenv, LookPath: exec.LookPath, GOOS: runtime.GOOS, WSL: isWSL()}
}

func isWSL() bool {
	b, err := os.ReadFile("/proc/version")
	return err == nil && bytes.Contains(bytes.ToLower(b), []byte("microsoft"))
}

// readTimeout bounds one clipboard read.
const readTimeout = 5 * time.Second

// NotAvailableError says no clipboard tool could be used, and how to get one.
type NotAvailableError struct {
	Tried []string
	Hint  string
}

func (e *NotAvailableError) Error() string {
	msg := "no clipboard tool available"
	if len(e.Tried) > 0 {
		msg += " (" + strings.Join(e.Tried, "; ") + ")"
	}
	return msg + ": " + e.Hint
}

// Detect picks the clipboard reader. The order: the config's
// clipboard.readCommand, Wayland wl-paste, X11 xclip then xsel, macOS
// pbpaste, Windows/WSL powershell.exe.
func Detect(env Env, readCommand string) (*Tool, error) {
	if s := strings.TrimSpace(readCommand); s != "" {
		return &Tool{Name: "readCommand", Read: []string{"sh", "-c", s}, Why: "clipboard.readCommand in the config: " + s}, nil
	}
	has := func(name string) bool { _, err := env.LookPath(name); return err == nil }
	var tried []string
	if env.Getenv("WAYLAND_DISPLAY") != "" {
		if has("wl-paste") {
			return &Tool{
				Name:  "wl-paste",
				Read:  []string{"wl-paste", "--no-newline"},
				Watch: []string{"wl-paste", "--watch", "echo", "changed"},
				Why:   "WAYLAND_DISPLAY is set",
			}, nil
		}
		tried = append(tried, "WAYLAND_DISPLAY is set but wl-paste is not installed (package wl-clipboard)")
	}
	if env.Getenv("DISPLAY") != "" {
		display := env.Getenv("DISPLAY")
		notify := func(ctx context.Context, changed func()) error { return watchX11(ctx, display, changed) }
		if has("xclip") {
			return &Tool{Name: "xclip", Read: []string{"xclip", "-selection", "clipboard", "-o"}, Notify: notify, Why: "DISPLAY is set"}, nil
		}
		if has("xsel") {
			return &Tool{Name: "xsel", Read: []string{"xsel", "--clipboard", "--output"}, Notify: notify, Why: "DISPLAY is set"}, nil
		}
		tried = append(tried, "DISPLAY is set but neither xclip nor xsel is installed")
	}
	if env.GOOS == "darwin" {
		if has("pbpaste") {
			return &Tool{Name: "pbpaste", Read: []string{"pbpaste"}, Why: "macOS"}, nil
		}
		tried = append(tried, "pbpaste not found")
	}
	if env.GOOS == "windows" || env.WSL {
		if has("powershell.exe") {
			return &Tool{Name: "powershell.exe", Read: []string{"powershell.exe", "-NoProfile", "-NonInteractive", "-Command", "Get-Clipboard -Raw"}, Why: "Windows/WSL"}, nil
		}
		tried = append(tried, "powershell.exe not found")
	}
	if len(tried) == 0 {
		tried = append(tried, "no WAYLAND_DISPLAY or DISPLAY: no graphical session")
	}
	return nil, &NotAvailableError{Tried: tried, Hint: installHint(env)}
}

func installHint(env Env) string {
	switch {
	case env.GOOS == "darwin":
		return "pbpaste ships with macOS; check your PATH"
	case env.GOOS == "windows" || env.WSL:
		return "make sure powershell.exe is on PATH"
	case env.Getenv("WAYLAND_DISPLAY") != "":
		return "install wl-clipboard (apt install wl-clipboard), or set clipboard.readCommand in relaycode.config.json"
	default:
		return "install xclip or xsel (apt install xclip) inside a graphical session, or set clipboard.readCommand in relaycode.config.json, or use relay apply FILE"
	}
}

// ReadWith runs the tool once and returns the clipboard text. An empty
// clipboard reads as "" (xclip and wl-paste fail on it).
func ReadWith(ctx context.Context, t *Tool) (string, error) {
	// A clipboard owner that never answers must not freeze relay watch.
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	c := run.Command(ctx, t.Read[0], t.Read[1:]...)
	out, err := c.Output()
	if err != nil {
		var exit *run.ExitError
		if errors.As(err, &exit) && emptyClipboard(exit.Stderr) {
			return "", nil
		}
		return "", fmt.Errorf("read clipboard with %s: %w", t.Name, err)
	}
	text := string(out)
	if t.Name == "powershell.exe" {
		text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	}
	return text, nil
}

func emptyClipboard(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "target string not available") || strings.Contains(s, "no selection") ||
		strings.Contains(s, "nothing is copied") || strings.Contains(s, "no suitable type")
}

// Read detects the tool for this system and reads the clipboard.
func Read(ctx context.Context) (string, error) {
	t, err := Detect(System(), "")
	if err != nil {
		return "", err
	}
	return ReadWith(ctx, t)
}
