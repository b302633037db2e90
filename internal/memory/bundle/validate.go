package bundle

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

// validateContent checks what the hashes cannot: a bundle with valid hashes
// may still carry hostile content. Everything is held to the rules the API
// applies when the same data is written through it, before anything is
// written, so an import cannot store what a read, an event stream, a browser
// or a terminal would then trip over.
func validateContent(th threadRow, versions []versionRow, snaps []snapshotRow, arts []artifactRow, events []eventRow) error {
	if !canonicalUUID(th.ID) {
		return unsafe("thread id %q is not a lowercase UUID in canonical form (the API could not open it)", th.ID)
	}
	if err := checkText("thread name", th.Name, memory.MaxNameLen, true); err != nil {
		return err
	}
	for _, ts := range []struct{ what, v string }{{"thread created_at", th.CreatedAt}, {"thread updated_at", th.UpdatedAt}} {
		if err := checkTime(ts.what, ts.v); err != nil {
			return err
		}
	}
	if th.Version < 1 || th.ArtifactCount < 0 || th.EventCount < 0 || th.CacheHits < 0 || th.TokensAvoided < 0 {
		return unsafe("thread.json has a negative counter or a version below 1")
	}
	if err := replayState(th, versions, snaps); err != nil {
		return err
	}
	for _, v := range versions {
		if err := checkText("state author", v.Author, memory.MaxNameLen, true); err != nil {
			return err
		}
		if err := checkTime("state created_at", v.CreatedAt); err != nil {
			return err
		}
	}
	for _, e := range events {
		if !memory.ValidEventType(e.Type) {
			return unsafe("event %d has type %q; an event type is a short name of letters, digits and . _ : - (no spaces or control characters)", e.ID, e.Type)
		}
		if err := checkTime("event time", e.At); err != nil {
			return err
		}
		if !json.Valid(e.Data) {
			return unsafe("event %d data is not JSON", e.ID)
		}
	}
	for _, a := range arts {
		if !memory.ValidMime(a.Mime) {
			return unsafe("artifact %s has mime %q; a mime is type/subtype with optional ;key=value parameters", a.Ref, a.Mime)
		}
		if err := checkText("artifact name", a.Name, memory.MaxNameLen, true); err != nil {
			return err
		}
		if err := checkText("artifact created_by", a.CreatedBy, memory.MaxNameLen, true); err != nil {
			return err
		}
		if err := checkText("artifact capability", a.Capability, memory.MaxNameLen, true); err != nil {
			return err
		}
		if err := checkTime("artifact created_at", a.CreatedAt); err != nil {
			return err
		}
		if a.PreviewLines < 0 || !utf8.ValidString(a.PreviewText) {
			return unsafe("artifact %s has an invalid preview", a.Ref)
		}
		if a.SourceRefs != "" {
			var refs []string
			if err := json.Unmarshal([]byte(a.SourceRefs), &refs); err != nil {
				return unsafe("artifact %s source_refs is not a JSON list of refs", a.Ref)
			}
			for _, r := range refs {
				if !memory.ValidRef(r) {
					return unsafe("artifact %s source ref %q is not an artifact ref", a.Ref, r)
				}
			}
		}
	}
	return nil
}

// replayState reads every version the way the store will: each snapshot must
// be a valid state document (a JSON object, not [] or null) for this thread
// at its own version, and the patches after it must apply.
func replayState(th threadRow, versions []versionRow, snaps []snapshotRow) error {
	bySnap := map[int][]byte{}
	for _, s := range snaps {
		if _, dup := bySnap[s.Version]; dup {
			return unsafe("state snapshot v%d appears twice", s.Version)
		}
		bySnap[s.Version] = s.Doc
	}
	var st *statedoc.State
	for _, v := range versions {
		if doc, ok := bySnap[v.Version]; ok {
			snap, err := statedoc.Parse(doc)
			if err != nil {
				return unsafe("state snapshot v%d is not a valid state document: %v", v.Version, err)
			}
			if snap.Version() != v.Version {
				return unsafe("state snapshot v%d says it is version %d", v.Version, snap.Version())
			}
			if id := snap.ThreadID(); id != th.ID {
				return unsafe("state snapshot v%d belongs to thread %q, not %s", v.Version, id, th.ID)
			}
			st = snap
			continue
		}
		if st == nil {
			return unsafe("state v%d comes before any snapshot", v.Version)
		}
		next, err := st.Patch(v.Patch, v.Version, time.Now())
		if err != nil {
			return unsafe("state v%d does not apply to v%d: %v", v.Version, v.Version-1, err)
		}
		st = next
	}
	return nil
}

func canonicalUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// checkText holds a stored string to the API's rules: UTF-8, bounded, and
// for one-line fields no NUL, CR or LF.
func checkText(what, s string, maxRunes int, oneLine bool) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxRunes {
		return unsafe("%s is not UTF-8 text of at most %d characters", what, maxRunes)
	}
	if oneLine {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 || s[i] == '\n' || s[i] == '\r' {
				return unsafe("%s %q must be one line without NUL", what, s)
			}
		}
	}
	return nil
}

func checkTime(what, s string) error {
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil || len(s) > 64 {
		return unsafe("%s %q is not an RFC 3339 time", what, s)
	}
	return nil
}
