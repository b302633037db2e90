package workspace

import (
	"context"
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

// checkAsk vets an ask before it runs; nothing is refused beyond what ask itself checks.
func (w *Workspace) checkAsk(req *AskRequest) error { return nil }
