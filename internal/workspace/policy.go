package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/trust"
)

// What each principal may do. Today a person and an agent differ only in who can approve
// a transaction; the limits an agent gets beyond that (its sandbox, the files it may hand
// a friend as context, which config commands it may trigger) belong here, next to it, so
// that neither front door carries a rule of its own.

// approver is who approves a transaction that needs approval. An agent has no terminal
// and must not approve its own changes: such a transaction is rolled back and the agent
// told to ask its user.
func (w *Workspace) approver() func(ctx context.Context, reason string) (bool, error) {
	if w.Principal == Agent {
		return nil
	}
	return w.Approve
}

// commandsGate is the config as a transaction may follow it: its commands (pre- and
// post-command, linter, clipboard read command) only when the person trusts this exact
// file (internal/trust). A person at a terminal is asked (TrustAsk); an agent never is,
// and can never give trust. skipped says what was left out, for the result and Notes.
func (w *Workspace) commandsGate(ctx context.Context, home string, cfg *config.Config) (run *config.Config, skipped string, err error) {
	var ask trust.Asker
	if w.Principal == Person && w.TrustAsk != nil {
		ask = func(q string) (bool, error) { return w.TrustAsk(ctx, q) }
	}
	d, err := trust.Open(home).Gate(cfg, ask)
	if err != nil {
		return nil, "", err
	}
	if n := d.Note(cfg.File); n != "" {
		skipped = n
		if w.Principal == Agent {
			skipped += "; only the user can trust it: ask them to read it and run relay trust"
		} else {
			w.notef("Warning: %s.", n)
			w.notef("Try: %s", trust.Hint)
		}
	}
	return trust.Strip(cfg, d), skipped, nil
}

// TrustConfig asks the person, up front, to trust the project's config when it names
// commands (relay watch does before its first answer); Notes says what stays off.
func (w *Workspace) TrustConfig(ctx context.Context) error {
	cfg, err := w.project()
	if err != nil {
		return err
	}
	home, err := w.home()
	if err != nil {
		return err
	}
	_, _, err = w.commandsGate(ctx, home, cfg)
	return err
}

// checkAsk vets an ask before it runs.
func (w *Workspace) checkAsk(req *AskRequest) error { return w.CheckAsk(&req.Request) }

// CheckAsk is what a principal may ask of a friend beyond what ask itself checks. A
// person may ask anything. An agent's prompt may carry a cloned README's instructions
// and nobody watches its calls, so a tool call gets less: a friend's sandbox no higher
// than workspace-write (read-only when it names none), danger-full-access only when the
// person set agent.max_sandbox in $RELAY_HOME/config.json; and a context file only from
// inside the project, symbolic links resolved first (never ~/.ssh, ../other, /proc).
func (w *Workspace) CheckAsk(req *ask.Request) error {
	if w.Principal != Agent {
		return nil
	}
	ceiling := backend.WorkspaceWrite
	config := "$RELAY_HOME/config.json"
	if home, err := w.home(); err == nil {
		config = relayhome.UserFile(home)
		if u, err := relayhome.LoadUser(home); err == nil && u.Agent.MaxSandbox == backend.DangerFullAccess {
			ceiling = backend.DangerFullAccess
		}
	}
	if sandboxRank(req.Sandbox) > sandboxRank(ceiling) {
		return &ask.Error{Usage: true,
			Message: fmt.Sprintf("a tool call cannot give a friend the %s sandbox (the most it may is %s)", req.Sandbox, ceiling),
			Hint:    `pass "sandbox":"read-only" or "workspace-write"; only the user can allow more (relay ask --sandbox danger-full-access at their terminal, or "agent": {"max_sandbox": "danger-full-access"} in ` + config + `)`}
	}
	if req.ContextFile != "" {
		p, err := w.insideProject(req.ContextFile)
		if err != nil {
			return &ask.Error{Usage: true, Message: err.Error(),
				Hint: `pass a file inside the project as context_file (a path relative to its root), or paste the text as "context"`}
		}
		req.ContextFile = p
	}
	return nil
}

// sandboxRank orders the sandboxes from least to most power ("" is read-only).
func sandboxRank(s string) int {
	switch s {
	case "", backend.ReadOnly:
		return 0
	case backend.WorkspaceWrite:
		return 1
	}
	return 2
}

// insideProject resolves name (relative to the project root, or absolute) with every
// symbolic link followed, and refuses anything outside the project or in .git/.
func (w *Workspace) insideProject(name string) (string, error) {
	root := w.WorkDir
	if w.Config != nil {
		root = w.Config.Dir
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("context_file: the project %s: %w", root, err)
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("context_file %s: %w", name, err)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("context_file %s is outside the project %s (a tool call may hand a friend only the project's files)", name, root)
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("context_file %s is inside .git/", name)
		}
	}
	return real, nil
}
