package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/relayhome"
)

// Memory is the way to the memory daemon: a client made on first use, and the project's
// thread. One Memory serves a whole session (a command, or relay mcp's many tool calls).
type Memory struct {
	// Home returns $RELAY_HOME, whose daemon.json and config.json say where the daemon
	// is; Getenv reads RELAY_URL, RELAY_TOKEN and RELAY_THREAD.
	Home   func() (string, error)
	Getenv func(string) string
	// ProjectDir holds .relaycode/thread; "" is no project.
	ProjectDir string
	// Start starts the daemon when none answers, and again once when it went away
	// (relay mcp); nil leaves it alone (the CLI: relay up is the user's to run).
	Start func(ctx context.Context) error
	// CreateThread gives the project a thread on first use when it has none (relay mcp).
	CreateThread bool
	// Warn tells the person, once per Memory, about a project thread file relay ignores
	// (one git tracks: it came with the repository); nil says nothing.
	Warn func(err error, hint string)

	mu sync.Mutex
	c  *client.Client

	warnOnce sync.Once

	threadMu sync.Mutex
	thread   string // the default thread, once known
	// envThread is $RELAY_THREAD resolved, once known
	envThread string
}

func (m *Memory) getenv(k string) string {
	if m.Getenv == nil {
		return os.Getenv(k)
	}
	return m.Getenv(k)
}

// Client returns a client of the daemon, connected on first use; with Start set, a daemon
// that does not answer is started (restart: even when a client was made before).
func (m *Memory) Client(ctx context.Context, restart bool) (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil && !restart {
		return m.c, nil
	}
	c, err := m.Dial()
	if err != nil {
		return nil, err
	}
	if m.Start != nil && c.Health(ctx) != nil {
		if u := m.getenv("RELAY_URL"); u != "" {
			return nil, WithHint(fmt.Errorf("no relay daemon answers at RELAY_URL %s", u), "start that daemon, or unset RELAY_URL to use a local one")
		}
		if err := m.Start(ctx); err != nil {
			return nil, err
		}
		if c, err = m.Dial(); err != nil {
			return nil, err
		}
	}
	m.c = c
	return c, nil
}

// Dial makes a client of the daemon of $RELAY_HOME (or RELAY_URL), without checking that
// it answers.
func (m *Memory) Dial() (*client.Client, error) {
	home := relayhome.Dir
	if m.Home != nil {
		home = m.Home
	}
	h, err := home()
	if err != nil {
		return nil, err
	}
	c, err := client.FromHome(h, m.getenv)
	if err != nil {
		return nil, WithHint(err, "relay doctor")
	}
	return c, nil
}

// Do runs fn against the daemon. With Start set, a daemon that went away mid-session is
// started again and fn retried once. Errors are marked with thread for Explain.
func (m *Memory) Do(ctx context.Context, thread string, fn func(*client.Client) error) error {
	c, err := m.Client(ctx, false)
	if err != nil {
		return err
	}
	err = fn(c)
	var ue *client.UnreachableError
	if m.Start != nil && errors.As(err, &ue) && ctx.Err() == nil {
		if c, err = m.Client(ctx, true); err != nil {
			return err
		}
		err = fn(c)
	}
	return MemoryError(err, thread)
}

// Resolve turns a thread id, id prefix or name into the id of a thread that exists.
func (m *Memory) Resolve(ctx context.Context, arg string) (string, error) {
	var id string
	err := m.Do(ctx, "", func(c *client.Client) (err error) {
		if _, perr := uuid.Parse(arg); perr == nil && len(arg) == 36 {
			id = strings.ToLower(arg)
			_, err = c.GetThread(ctx, id)
			return err
		}
		id, err = ResolveThread(ctx, c, arg)
		return err
	})
	return id, err
}

// ResolveThread turns a thread id, id prefix or name into the thread's id with c.
func ResolveThread(ctx context.Context, c *client.Client, arg string) (string, error) {
	if _, err := c.GetThread(ctx, arg); err == nil {
		return arg, nil
	} else if !client.IsCode(err, "not_found") && !client.IsCode(err, "bad_request") {
		return "", MemoryError(err, "")
	}
	threads, err := c.ListThreads(ctx, 1000)
	if err != nil {
		return "", MemoryError(err, "")
	}
	var byName, byPrefix []string
	for _, t := range threads {
		if t.Name == arg {
			byName = append(byName, t.ID)
		}
		if strings.HasPrefix(t.ID, strings.ToLower(arg)) {
			byPrefix = append(byPrefix, t.ID)
		}
	}
	for _, ids := range [][]string{byName, byPrefix} {
		switch {
		case len(ids) == 1:
			return ids[0], nil
		case len(ids) > 1:
			return "", WithHint(fmt.Errorf("%q matches %d threads (%s); give more of the id",
				arg, len(ids), strings.Join(shortIDs(ids, 4), ", ")), "relay runs")
		}
	}
	return "", WithHint(fmt.Errorf("no thread %q: it is neither a thread id, an id prefix nor a thread name", arg), "relay runs")
}

func shortIDs(ids []string, n int) []string {
	out := []string{}
	for i, id := range ids {
		if i == n {
			out = append(out, "…")
			break
		}
		out = append(out, shortID(id))
	}
	return out
}

// DefaultArg is the thread chosen without asking the daemon: named (a flag, a tool
// argument), else $RELAY_THREAD, else the project's remembered thread; explicit says
// the caller named it.
func (m *Memory) DefaultArg(named string) (arg string, explicit bool, err error) {
	if named != "" {
		return named, true, nil
	}
	if t := strings.TrimSpace(m.getenv("RELAY_THREAD")); t != "" {
		return t, false, nil
	}
	if m.ProjectDir == "" {
		return "", false, nil
	}
	id, err := m.projectThread()
	var tracked *TrackedThreadError
	if errors.As(err, &tracked) {
		return "", false, nil // warned; the project has no thread of its own
	}
	return id, false, err
}

// projectThread reads the project's thread file; one git tracks is ignored with a warning.
func (m *Memory) projectThread() (string, error) {
	id, err := ReadProjectThread(m.ProjectDir)
	var tracked *TrackedThreadError
	if errors.As(err, &tracked) {
		m.warnOnce.Do(func() {
			if m.Warn != nil {
				m.Warn(err, TrackedThreadHint)
			}
		})
		return "", err
	}
	return id, err
}

// DefaultThread is the id of the thread an operation records into: named (an id, id
// prefix or name), else $RELAY_THREAD, else the project's thread. With CreateThread, a
// project whose thread is missing (none yet, or one from another machine) gets a new one
// when create is true; otherwise "" means there is none.
func (m *Memory) DefaultThread(ctx context.Context, named string, create bool) (string, error) {
	if named != "" {
		return m.Resolve(ctx, named)
	}
	m.threadMu.Lock()
	defer m.threadMu.Unlock()
	if t := strings.TrimSpace(m.getenv("RELAY_THREAD")); t != "" {
		// resolved once: a lookup on every call cost relay mcp a daemon round trip each time,
		// and a thread gone since answers "thread … not found" on the call itself
		if m.envThread == "" {
			id, err := m.Resolve(ctx, t)
			if err != nil {
				return "", err
			}
			m.envThread = id
		}
		return m.envThread, nil
	}
	if m.thread != "" {
		return m.thread, nil
	}
	if m.ProjectDir == "" {
		return "", nil
	}
	id, err := m.projectThread()
	var tracked *TrackedThreadError
	persist := !errors.As(err, &tracked) // a tracked file is not this project's memory: a thread of its own is made, not written over it
	if !persist {
		id, err = "", nil
	}
	if err != nil {
		return "", WithHint(err, `remove .relaycode/thread (relay mcp makes a new thread), or pass "thread" to the tool`)
	}
	if id != "" && !m.CreateThread {
		m.thread = id
		return id, nil
	}
	if id != "" {
		// a thread id from a clone or another machine may not exist here
		err := m.Do(ctx, "", func(c *client.Client) error { _, err := c.GetThread(ctx, id); return err })
		if err == nil {
			m.thread = id
			return id, nil
		}
		if !client.IsCode(err, "not_found") { // a missing thread is made again below
			return "", err
		}
	}
	if !create || !m.CreateThread {
		return "", nil
	}
	var t memory.Thread
	// the project's name may already name a thread (made by hand): take the next free one
	err = m.Do(ctx, "", func(c *client.Client) (err error) {
		t, err = c.CreateThreadIf(ctx, filepath.Base(m.ProjectDir), memory.NameTakenNext)
		return err
	})
	if err != nil {
		return "", err
	}
	if persist {
		if err := WriteProjectThread(m.ProjectDir, t.ID); err != nil {
			return "", fmt.Errorf("remember the project's thread: %w", err)
		}
	}
	m.thread = t.ID
	return t.ID, nil
}

// recorder is the client and thread w records into, resolved once per workspace; nil
// when nothing is to be recorded (no thread, or the daemon is out of reach: then one
// warning line says so).
func (w *Workspace) recorder(ctx context.Context) (*client.Client, string) {
	m := w.Memory
	if m == nil {
		return nil, ""
	}
	w.rec.once.Do(func() {
		arg, _, err := m.DefaultArg(w.Thread)
		if err != nil {
			w.warnUnrecorded(arg, err)
			return
		}
		if arg == "" && !m.CreateThread {
			return
		}
		id, err := m.DefaultThread(ctx, w.Thread, true)
		if err != nil {
			w.warnUnrecorded(arg, err)
			return
		}
		w.rec.thread = id
	})
	if w.rec.thread == "" {
		return nil, ""
	}
	c, err := m.Client(ctx, false)
	if err != nil {
		w.warnUnrecorded(w.rec.thread, err)
		return nil, ""
	}
	return c, w.rec.thread
}

// warnUnrecorded says once per workspace that something was not recorded.
func (w *Workspace) warnUnrecorded(thread string, err error) {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	if w.rec.warned {
		return
	}
	w.rec.warned = true
	what := "the memory thread"
	if thread != "" {
		what = "thread " + thread
	}
	w.notef("Warning: not recorded in %s: %s", what, FirstLine(err.Error()))
}
