package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// repairMirror brings the file mirror up to date with the database after a crash: events
// committed but not yet appended to events.log, and a stale state.json. It runs in the
// background at open; the database stays the source of truth throughout.
func (s *SQLite) repairMirror(ctx context.Context) {
	if s.mirror.off {
		return
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, version, last_event_id FROM threads`)
	if err != nil {
		s.mirror.fail(err)
		return
	}
	type row struct {
		id      string
		version int
		lastEv  int64
	}
	var all []row
	for rows.Next() {
		var r row
		if rows.Scan(&r.id, &r.version, &r.lastEv) == nil {
			all = append(all, r)
		}
	}
	rows.Close()
	for _, r := range all {
		if ctx.Err() != nil || s.closed.Load() {
			return
		}
		s.repairEvents(ctx, r.id, r.lastEv)
		// mirrorState reads the cached state or loads it without caching: a background
		// repair is not a use, and touching the cache here would reorder its eviction.
		if stateFileVersion(filepath.Join(s.mirror.threadDir(r.id), "state.json")) != r.version {
			s.mirrorState(r.id)
		}
	}
}

// repairEvents appends the events missing from a thread's events.log; it holds the write
// lock so live appends cannot interleave.
func (s *SQLite) repairEvents(ctx context.Context, id string, lastEv int64) {
	path := filepath.Join(s.mirror.threadDir(id), "events.log")
	// Run as a write so live appends (which happen after commits) cannot interleave.
	_ = s.write(ctx, func(ctx context.Context, tx Tx, b *batch) (func(), error) {
		logged := lastLoggedEvent(path)
		for logged < lastEv {
			evs, err := s.Events(ctx, id, logged, 1000)
			if err != nil || len(evs) == 0 {
				return nil, nil
			}
			for _, e := range evs {
				s.mirror.event(e)
				logged = e.ID
			}
		}
		return nil, nil
	})
}

// lastLoggedEvent returns the id of the last complete line of an events.log, cutting off a
// half-written last line left by a crash.
func lastLoggedEvent(path string) int64 {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	n := min(st.Size(), 1<<20)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && err != io.EOF {
		return 0
	}
	if buf[len(buf)-1] != '\n' {
		i := bytes.LastIndexByte(buf, '\n')
		_ = f.Truncate(st.Size() - n + int64(i+1))
		buf = buf[:i+1]
	}
	buf = bytes.TrimRight(buf, "\n")
	line := buf[bytes.LastIndexByte(buf, '\n')+1:]
	var e struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal(line, &e) != nil {
		return 0
	}
	return e.ID
}

func stateFileVersion(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var d struct {
		Version int `json:"version"`
	}
	_ = json.Unmarshal(b, &d)
	return d.Version
}
