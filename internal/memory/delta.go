package memory

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	oh, err := headerAt(ctx, st, id, old, th.Metrics)
	if err != nil {
		return HeaderChange{}, err
	}
	if oh == nil {
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

// headerAt rebuilds the header an agent read at version old: that state plus the artifacts
// stored up to the moment the version was written (the header lists recent artifacts that
// need no new version). An artifact stored after vN without a new version appears again in
// a delta since vN. nil means the version cannot be summarized.
func headerAt(ctx context.Context, st Store, id string, old State, m Metrics) ([]byte, error) {
	vs, err := st.Versions(ctx, id, old.Version-1, 1)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 || vs[0].Version != old.Version {
		return nil, nil
	}
	arts, err := st.ListArtifacts(ctx, id, ListArtifactsOptions{Before: refBound(vs[0].CreatedAt.Time), Limit: statedoc.MaxArtifactRefs})
	if err != nil {
		return nil, err
	}
	recent := make([]statedoc.ArtifactRef, len(arts))
	for i, a := range arts { // newest first from the store; the header wants oldest first
		recent[len(arts)-1-i] = statedoc.ArtifactRef{Ref: a.Ref, Type: a.Type, Name: a.Name}
	}
	sd, err := statedoc.Parse(old.Doc)
	if err != nil {
		return nil, nil
	}
	h, _, err := sd.HeaderWithArtifacts(statedoc.Metrics{CacheHits: m.CacheHits, TokensAvoided: m.TokensAvoided}, recent)
	if err != nil {
		return nil, nil
	}
	return h, nil
}

// refBound is the lowest ref of the millisecond after t: refs below it were made at or before t.
func refBound(t time.Time) string {
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()+1))
	return hex.EncodeToString(ms[2:]) + "00000000000000"
}
