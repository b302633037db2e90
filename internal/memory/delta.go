package memory

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relaydev/relay/internal/memory/statedoc"
)

// HeaderChange is what GET /threads/{id}/state/header?since=vN answers: either Delta (what
// changed from the header at Since to the header at Version, see statedoc.HeaderDelta) or,
// when no smaller delta exists or Since cannot be read, the full header in Full.
type HeaderChange struct {
	Since     int
	Version   int
	Delta     json.RawMessage // members that changed; nil when Full is set
	Full      json.RawMessage
	Truncated bool
}

// DeltaJSON renders the delta body: {"since":7,"v":9,…changed members}. Only meaningful
// when Delta is set.
func (c HeaderChange) DeltaJSON() []byte {
	b := fmt.Appendf(nil, `{"since":%d,"v":%d`, c.Since, c.Version)
	if len(c.Delta) > 2 {
		b = append(b, ',')
		b = append(b, c.Delta[1:]...)
		return b
	}
	return append(b, '}')
}

// HeaderSince computes the change of a thread's header since version since. Both headers are
// rendered with the thread's current counters, so the delta carries state changes only; the
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
		ch.Delta, ch.Full = json.RawMessage(`{}`), nil
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
	d, err := statedoc.HeaderDelta(oh, cur.JSON)
	if err != nil {
		return HeaderChange{}, fmt.Errorf("diff header of thread %s since v%d: %w", id, since, err)
	}
	if d != nil {
		ch.Delta, ch.Full = d, nil
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
	// Refs carry milliseconds only: an artifact stored after the version within the same
	// millisecond sorts below the bound, so the events after the version name those (by
	// either form of their ref: events hold the short one since refs have one form).
	bound := refBound(vs[0].CreatedAt.Time)
	later := map[string]bool{}
	evs, err := st.Events(ctx, id, vs[0].EventID, 64)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		if e.Type != EventArtifactStored {
			continue
		}
		var d struct {
			Ref string `json:"ref"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			later[Short(d.Ref)] = true
		}
	}
	// Pages newest first until the header's places are filled: any number of artifacts the
	// header leaves out (every search stores one) can lie between those it lists.
	// A page twice the last (up to 1,000) keeps a thread of many searches to a few reads.
	var recent []statedoc.ArtifactRef
	for page := 2*statedoc.MaxArtifactRefs + len(later); len(recent) < statedoc.MaxArtifactRefs; page = min(2*page, 1000) {
		arts, err := st.ListArtifacts(ctx, id, ListArtifactsOptions{Before: bound, Limit: page})
		if err != nil {
			return nil, err
		}
		for _, a := range arts {
			if later[Short(a.Ref)] || !InHeader(a) {
				continue
			}
			recent = append(recent, statedoc.ArtifactRef{Ref: a.Ref, Type: a.Type, Name: a.Name})
			if len(recent) == statedoc.MaxArtifactRefs {
				break
			}
		}
		if len(arts) < page {
			break
		}
		bound = arts[len(arts)-1].Ref
	}
	slices.Reverse(recent) // newest first from the store; the header wants oldest first
	sd, err := statedoc.Parse(old.Doc)
	if err != nil {
		return nil, nil
	}
	name, err := HeaderNames(ctx, st, sd, recent)
	if err != nil {
		return nil, err
	}
	h, _, err := sd.HeaderFor(statedoc.Metrics{CacheHits: m.CacheHits, TokensAvoided: m.TokensAvoided}, recent, name)
	if err != nil {
		return nil, nil
	}
	return h, nil
}

// InHeader reports whether a header's recent artifacts may name a: relay's own reports and
// searches' result lists are not an agent's work. The stores' Header queries select the same
// artifacts (the store conformance suite holds them to it).
func InHeader(a Artifact) bool {
	return a.Provenance.CreatedBy != ReportAuthor && a.Provenance.Capability != SearchCapability
}

// HeaderNames returns how a header built from sd and recent names its refs (Names over
// every ref the header can list), for stores building headers.
func HeaderNames(ctx context.Context, st interface {
	SharedShorts(context.Context, []string) (map[string]bool, error)
}, sd *statedoc.State, recent []statedoc.ArtifactRef) (func(string) string, error) {
	refs := sd.ArtifactRefs()
	for _, a := range recent {
		refs = append(refs, a.Ref)
	}
	return Names(ctx, st.SharedShorts, refs)
}

// refBound is the lowest ref of the millisecond after t: refs below it were made at or before t.
func refBound(t time.Time) string {
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()+1))
	return hex.EncodeToString(ms[2:]) + "00000000000000"
}
