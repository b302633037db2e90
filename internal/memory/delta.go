package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relaydev/relay/internal/memory/statedoc"
)

// HeaderChange is what GET /threads/{id}/state/header?since=vN answers: either Patch (an RFC
// 6902 JSON Patch from the header at Since to the header at Version) or, when no smaller patch
// exists or Since cannot be read, the full header in Full.
type HeaderChange struct {
	Since     int
	Version   int
	Patch     json.RawMessage // nil when Full is set
	Full      json.RawMessage
	Truncated bool
}

// DeltaJSON renders the delta body: {"since":7,"v":9,"patch":[…]}. Only meaningful when Patch is set.
func (c HeaderChange) DeltaJSON() []byte {
	b := fmt.Appendf(nil, `{"since":%d,"v":%d,"patch":`, c.Since, c.Version)
	b = append(b, c.Patch...)
	return append(b, '}')
}

// HeaderSince computes the change of a thread's header since version since. Both headers are
// rendered with the thread's current counters, so the patch carries state changes only; the
// live counters (metrics) change without a new version and are read from a full header.
func HeaderSince(ctx context.Context, st Store, id string, since int) (HeaderChange, error) {
	cur, err := st.Header(ctx, id)
	if err != nil {
		return HeaderChange{}, err
	}
	ch := HeaderChange{Since: since, Version: cur.Version, Full: cur.JSON, Truncated: cur.Truncated}
	if since < 1 || since > cur.Version {
		return ch, nil // unknown to this thread: the full header is the only honest answer
	}
	if since == cur.Version {
		ch.Patch, ch.Full = json.RawMessage(`[]`), nil
		return ch, nil
	}
	th, err := st.GetThread(ctx, id)
	if err != nil {
		return HeaderChange{}, err
	}
	old, err := st.State(ctx, id, since)
	if err != nil {
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return ch, nil // pruned history: fall back to the full header
		}
		return HeaderChange{}, err
	}
	oh, _, err := statedoc.HeaderInfo(old.Doc, statedoc.Metrics{CacheHits: th.Metrics.CacheHits, TokensAvoided: th.Metrics.TokensAvoided})
	if err != nil {
		return ch, nil // an old version the current rules cannot summarize: send it all
	}
	p, err := statedoc.HeaderDelta(oh, cur.JSON)
	if err != nil {
		return HeaderChange{}, fmt.Errorf("diff header of thread %s since v%d: %w", id, since, err)
	}
	if p != nil {
		ch.Patch, ch.Full = p, nil
	}
	return ch, nil
}
