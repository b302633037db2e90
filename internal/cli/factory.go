package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/workspace"
)

// Factory holds what commands need from the outside world, so tests can
// replace any of it.
type Factory struct {
	IO      *iostreams.IOStreams
	Version string
	// WorkDir is where project commands look for relaycode.config.json.
	WorkDir func() (string, error)
	// Getenv reads the environment (agents' depth guard, RELAY_HOME, …).
	Getenv func(string) string
	// Home returns $RELAY_HOME.
	Home func() (string, error)
}

func newFactory(ios *iostreams.IOStreams, version string) *Factory {
	return &Factory{
		IO:      ios,
		Version: version,
		WorkDir: os.Getwd,
		Getenv:  os.Getenv,
		Home:    relayhome.Dir,
	}
}

// ProjectConfig loads the config governing the working directory, printing
// its warnings, or explains how to create one.
func (f *Factory) ProjectConfig() (*config.Config, error) {
	dir, err := f.WorkDir()
	if err != nil {
		return nil, err
	}
	return workspace.LoadConfig(dir, f.IO.ErrOut)
}

// memory is the way to the daemon for a person's command: never started for them (relay
// up is theirs to run), and the thread the project in the working directory remembers.
func (f *Factory) memory() *workspace.Memory {
	m := &workspace.Memory{Home: f.Home, Getenv: f.Getenv, Warn: func(err error, hint string) {
		fmt.Fprintf(f.IO.ErrOut, "Warning: %v.\nTry: %s\n", err, hint)
	}}
	if dir, err := f.WorkDir(); err == nil {
		if file, err := config.Find(dir); err == nil {
			m.ProjectDir = filepath.Dir(file)
		}
	}
	return m
}

// personWorkspace is the project cfg as a person at this terminal works in it: progress
// and notes on stderr, approval asked on the terminal when there is one (even with -y: a
// config change still needs a person), recorded through mem (nil: not recorded).
func personWorkspace(ios *iostreams.IOStreams, cfg *config.Config, home func() (string, error), mem *workspace.Memory, thread string) *workspace.Workspace {
	w := &workspace.Workspace{Principal: workspace.Person, Config: cfg, Home: home, Memory: mem, Thread: thread, Notes: ios.ErrOut,
		Progress: func(line string) { fmt.Fprintln(ios.ErrOut, line) }}
	if cfg != nil {
		w.WorkDir = cfg.Dir
	}
	if ios.IsStdinTTY() {
		w.TrustAsk = func(ctx context.Context, q string) (bool, error) { return askYesNo(ctx, ios, q) }
		w.Approve = func(ctx context.Context, reason string) (bool, error) {
			if w.Config != nil && w.Config.Core.EnableNotifications { // the config in force (relay watch reloads it)
				notify("relay: approval needed", reason)
			}
			return askYesNo(ctx, ios, "Changes applied. Do you want to approve and commit them? (y/N) ")
		}
	}
	return w
}
