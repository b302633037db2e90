package statedoc

import (
	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// ArtifactRef is an artifact stored in the thread, listed in the header's artifact_refs
// even when no state patch added it to the document's artifacts.
type ArtifactRef struct {
	Ref  string
	Type string
	Name string
}

// HeaderWithArtifacts is Header with the thread's recently stored artifacts (oldest first)
// merged into artifact_refs: the document's artifacts, then each stored one the document
// does not list, keeping the newest MaxArtifactRefs. Agents then see what was stored without
// patching the state by hand, and the state's version does not move on every put.
func (s *State) HeaderWithArtifacts(m Metrics, recent []ArtifactRef) ([]byte, bool, error) {
	return s.HeaderFor(m, recent, nil)
}

// HeaderFor is HeaderWithArtifacts that writes refs as name returns them (the store passes
// the one form relay shows; nil keeps refs as they are). A stored artifact the document
// already lists, by either form of its ref, is listed once.
func (s *State) HeaderFor(m Metrics, recent []ArtifactRef, name func(ref string) string) ([]byte, bool, error) {
	h, err := collectValue(s.root, m)
	if err != nil {
		return nil, false, err
	}
	h.short = name
	key := func(ref string) string {
		if name != nil {
			return name(ref)
		}
		return ref
	}
	if len(recent) > 0 {
		v, _ := s.root.Get("artifacts")
		listed, _ := v.([]any)
		seen := make(map[string]bool, len(listed))
		for _, it := range listed {
			if o, ok := it.(*jsonpatch.Object); ok {
				if r, ok := o.Get("ref"); ok {
					if rs, ok := r.(string); ok {
						seen[key(rs)] = true
					}
				}
			}
		}
		l := h.lists[hArtifacts]
		for _, a := range recent {
			if seen[key(a.Ref)] {
				continue
			}
			seen[key(a.Ref)] = true
			o := jsonpatch.NewObject(3)
			o.Set("ref", a.Ref)
			if a.Type != "" {
				o.Set("type", a.Type)
			}
			if a.Name != "" {
				o.Set("name", a.Name)
			}
			b, err := jsonpatch.Encode(o)
			if err != nil {
				return nil, false, err
			}
			l = append(l, b)
			h.totals[hArtifacts]++
		}
		h.lists[hArtifacts] = l[max(0, len(l)-MaxArtifactRefs):]
	}
	return h.finish()
}

// ArtifactRefs returns the refs of the document's newest MaxArtifactRefs artifacts: the
// ones a header can list (with the stored ones the store adds).
func (s *State) ArtifactRefs() []string {
	v, _ := s.root.Get("artifacts")
	listed, _ := v.([]any)
	var refs []string
	for _, it := range listed[max(0, len(listed)-MaxArtifactRefs):] {
		if o, ok := it.(*jsonpatch.Object); ok {
			if r, ok := o.Get("ref"); ok {
				if rs, ok := r.(string); ok {
					refs = append(refs, rs)
				}
			}
		}
	}
	return refs
}
