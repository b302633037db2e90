package clipboard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// writer is one program that can put text on the clipboard.
type writer struct {
	name string
	args []string
	// usable reports whether this session can use it (display variables).
	usable func() bool
}

func hasEnv(k string) func() bool { return func() bool { return os.Getenv(k) != "" } }
func always() bool                { return true }

var writers = []writer{
	{"wl-copy", nil, hasEnv("WAYLAND_DISPLAY")},
	{"xclip", []string{"-selection", "clipboard", "-in"}, hasEnv("DISPLAY")},
	{"xsel", []string{"--clipboard", "--input"}, hasEnv("DISPLAY")},
	{"pbcopy", nil, always},
	{"clip.exe", nil, always},
}

// ErrNoWriter means no clipboard program is usable in this session.
var ErrNoWriter = errors.New("no clipboard tool found: install wl-clipboard (Wayland), xclip or xsel (X11)")

// Write puts text on the system clipboard with the first usable tool and
// returns that tool's name.
func Write(text string) (string, error) {
	for _, w := range writers {
		if !w.usable() {
			continue
		}
		if _, err := exec.LookPath(w.name); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c := run.Command(ctx, w.name, w.args...)
		c.Stdin = strings.NewReader(text)
		// xclip and xsel fork a child that serves the selection; it must not
		// hold our pipes open, so its output goes to the null device.
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			cancel()
			return "", err
		}
		c.Stdout, c.Stderr = null, null
		err = c.Run()
		null.Close()
		cancel()
		if err != nil {
			return w.name, err
		}
		return w.name, nil
	}
	return "", ErrNoWriter
}
