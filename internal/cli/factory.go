package cli

import (
	"os"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
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
	cfg, warnings, err := config.Load(dir)
	for _, w := range warnings {
		f.IO.ErrOut.Write([]byte("Warning: " + w + "\n"))
	}
	if config.IsNotFound(err) {
		return nil, WithHint(err, "relay init")
	}
	if config.IsNotOwned(err) {
		return nil, WithHint(err, "if you trust that user, copy the config into a directory you own; otherwise run relay in a project of your own")
	}
	if err != nil {
		return nil, WithHint(err, "fix the file, or see every key with: relay config schema")
	}
	return cfg, nil
}
