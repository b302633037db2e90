package workspace

import (
	"context"

	"github.com/relaydev/relay/internal/config"
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

// checkAsk vets an ask before it runs; nothing is refused beyond what ask itself checks.
func (w *Workspace) checkAsk(req *AskRequest) error { return nil }
