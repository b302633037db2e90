// Package workspace is where relay's three jobs meet: one project (its config and its
// transactions), the project's memory thread, and a client of the memory daemon.
//
// Both front doors run through it: the CLI for a person at the terminal, relay mcp for an
// agent's tool call. Applying an answer or an edit, reverting, listing transactions and
// asking a friend follow the same rules for both, and leave the same events and artifacts
// in the thread. What differs by who asks (the Principal) is decided here, in policy.go,
// and the next step offered after an error is written once, in Explain.
package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/relayhome"
)

// Principal is who asks for an operation.
type Principal int

const (
	// Person is someone at the terminal: relay's command line.
	Person Principal = iota
	// Agent is an agent calling a tool of relay mcp.
	Agent
)

func (p Principal) String() string {
	if p == Agent {
		return "agent"
	}
	return "person"
}

// Workspace is one project as one principal works in it. A front door builds one per
// command (or per tool call) and sets what it has; the zero value of each field is safe.
type Workspace struct {
	Principal Principal
	// Config is the project's config; nil outside a project, where ask and memory still work.
	Config *config.Config
	// WorkDir is the directory the command runs in.
	WorkDir string
	// Home returns $RELAY_HOME: the record key, ask's sessions, the daemon's address.
	Home func() (string, error)
	// Getenv reads the environment; Environ lists it for the friends ask starts.
	Getenv  func(string) string
	Environ func() []string
	// Approve asks a person to approve a transaction that needs it (the reason says
	// why); nil means nobody can be asked, so such a transaction is rolled back.
	Approve func(ctx context.Context, reason string) (bool, error)
	// TrustAsk asks the person at a terminal whether to trust the project's config (it
	// names the commands relay runs); nil means nobody can be asked. An agent is never asked.
	TrustAsk func(ctx context.Context, question string) (bool, error)
	// Progress receives the transaction engine's progress lines; nil drops them.
	Progress func(line string)
	// Notes receives what the user should read besides the result: recovered
	// transactions, ignored code blocks, warnings. nil drops them.
	Notes io.Writer
	// Memory is the way to the daemon and the project's thread; nil records nothing.
	Memory *Memory
	// Thread is the thread the person or agent named for this work (a flag, a tool
	// argument): an id, id prefix or name. "" is $RELAY_THREAD, else the project's.
	Thread string
	// Asker runs the friends; nil is the real backends (tests inject one).
	Asker *ask.Asker

	recoverOnce sync.Once
	recoverErr  error

	rec struct { // where this workspace records, resolved on first use
		once   sync.Once
		thread string
		mu     sync.Mutex
		warned bool
	}
}

func (w *Workspace) getenv(k string) string {
	if w.Getenv == nil {
		return os.Getenv(k)
	}
	return w.Getenv(k)
}

func (w *Workspace) environ() []string {
	if w.Environ == nil {
		return os.Environ()
	}
	return w.Environ()
}

func (w *Workspace) home() (string, error) {
	if w.Home == nil {
		return relayhome.Dir()
	}
	return w.Home()
}

// notef writes one line to Notes.
func (w *Workspace) notef(format string, args ...any) {
	if w.Notes != nil {
		fmt.Fprintf(w.Notes, format+"\n", args...)
	}
}

// project returns the project's config, or says how to make one.
func (w *Workspace) project() (*config.Config, error) {
	if w.Config == nil {
		return nil, WithHint(&config.NotFoundError{Dir: w.WorkDir}, "relay init")
	}
	return w.Config, nil
}

// LoadConfig loads the config governing dir, writing its warnings to notes, or says how
// to make one.
func LoadConfig(dir string, notes io.Writer) (*config.Config, error) {
	cfg, warnings, err := config.Load(dir)
	for _, w := range warnings {
		if notes != nil {
			fmt.Fprintf(notes, "Warning: %s\n", w)
		}
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

// ProjectDir is the root of the project governing wd, else wd itself: an agent may work
// in a directory relay was never initialised in, and its thread is still remembered there.
func ProjectDir(wd string) string {
	if file, err := config.Find(wd); err == nil {
		return filepath.Dir(file)
	}
	return wd
}
