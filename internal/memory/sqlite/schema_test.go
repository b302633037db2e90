package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// lastCommitPages returns the page numbers the WAL's newest transaction wrote (nil when the
// WAL holds no complete transaction of its current generation).
func lastCommitPages(t *testing.T, wal string) []uint32 {
	t.Helper()
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 32 {
		return nil
	}
	size := int(binary.BigEndian.Uint32(b[8:]))
	salt1, salt2 := binary.BigEndian.Uint32(b[16:]), binary.BigEndian.Uint32(b[20:])
	var last, cur []uint32
	for off := 32; off+24+size <= len(b); off += 24 + size {
		h := b[off:]
		if binary.BigEndian.Uint32(h[8:]) != salt1 || binary.BigEndian.Uint32(h[12:]) != salt2 {
			break // a frame of an earlier generation: the WAL was rewound before it
		}
		cur = append(cur, binary.BigEndian.Uint32(h))
		if binary.BigEndian.Uint32(h[4:]) != 0 { // a commit frame
			last, cur = cur, nil
		}
	}
	return last
}

// TestCommitPages: what one durable write costs the disk is the pages its commit writes to
// the WAL (each is a 4 KB write, and CPU to build). A sequential patch writes the thread's
// row, the version, the event and its index entry: 4 pages (6 while events were
// AUTOINCREMENT, which also rewrote sqlite_sequence, and the thread listing's index held
// updated_at itself, rewritten by every commit); a small text put 11 (14 with the same
// two, and an index by body hash that only a bucket's garbage collection reads). The
// median commit is the one without a b-tree split (random ids decide where splits fall, so
// the mean varies from run to run). The bounds catch a new index or table on the hot path,
// which should be a decision, not an accident.
func TestCommitPages(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		write func(s *SQLite, thread string, i int) error
		most  int
	}{
		{"patch", func(s *SQLite, thread string, i int) error {
			_, err := s.PatchState(ctx, thread, factPatch(i), 0, "")
			return err
		}, 4},
		{"put", func(s *SQLite, thread string, i int) error {
			_, err := s.PutArtifact(ctx, thread, memory.PutArtifactParams{Type: "text", Content: fmt.Appendf(nil, "note %d: the quagga moved to the north field", i)})
			return err
		}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := OpenSQLite(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Its checkpoints rewind the WAL with a commit of their own, which could land
			// between a write and the read of its pages (CI failed so, once).
			stopCheckpointer(s)
			for range 5 { // other threads, so the hot thread's rows are not alone in their pages
				o, err := s.CreateThread(ctx, memory.CreateThreadParams{})
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.write(s, o.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
			th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
			if err != nil {
				t.Fatal(err)
			}
			const n = 101
			var frames []int
			for i := range n {
				if err := tc.write(s, th.ID, i); err != nil {
					t.Fatal(err)
				}
				pages := lastCommitPages(t, filepath.Join(dir, "relay.db-wal"))
				if len(pages) == 0 {
					t.Fatalf("write %d: no commit in the WAL", i)
				}
				frames = append(frames, len(pages))
			}
			slices.Sort(frames)
			if got := frames[n/2]; got > tc.most {
				t.Errorf("a %s commits %d pages (median of %d), want at most %d", tc.name, got, n, tc.most)
			}
		})
	}
}

// TestUpgradeEventsPlainRowid: a store whose events table was AUTOINCREMENT opens with its
// events, ids and counters as they were, and the next event takes the next id.
func TestUpgradeEventsPlainRowid(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s, err := OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.CreateThread(ctx, memory.CreateThreadParams{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Put the table back as the earlier layout had it, with events of ids 1, 2 and 7.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(home, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE events`,
		`CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, type TEXT NOT NULL, at TEXT NOT NULL, data BLOB NOT NULL)`,
		`CREATE INDEX events_thread ON events(thread_id, id)`,
		`INSERT INTO events(id, thread_id, type, at, data) VALUES (1, '` + th.ID + `', 'note', '2026-01-01T00:00:00.000Z', '{"n":1}'), (2, '` + th.ID + `', 'note', '2026-01-01T00:00:01.000Z', '{"n":2}'), (7, '` + th.ID + `', 'note', '2026-01-01T00:00:02.000Z', '{"n":7}')`,
		`UPDATE threads SET event_count = 3, last_event_id = 7 WHERE id = '` + th.ID + `'`,
		`DELETE FROM schema_migrations WHERE name >= '0500'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenSQLite(home, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(ctx, th.ID, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%d:%s", e.ID, e.Data))
	}
	if want := `1:{"n":1} 2:{"n":2} 7:{"n":7}`; strings.Join(got, " ") != want {
		t.Fatalf("events after the upgrade: %s, want %s", strings.Join(got, " "), want)
	}
	e, err := s.AppendEvent(ctx, th.ID, "note", map[string]int{"n": 8})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != 8 {
		t.Errorf("the next event's id is %d, want 8", e.ID)
	}
	after, err := s.GetThread(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.EventCount != 4 || after.LastEventID != 8 {
		t.Errorf("thread counters after the upgrade and one event: %d events, last %d; want 4, 8", after.EventCount, after.LastEventID)
	}
	var ddl string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'events'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
		t.Errorf("events is still AUTOINCREMENT: %s", ddl)
	}
	var seq int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_sequence WHERE name = 'events'`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if seq != 0 {
		t.Error("sqlite_sequence still counts events")
	}
}

// TestListThreadsNewestFirst: the listing is newest write first across minutes and within
// one (it walks an index of each thread's minute and sorts inside it), then by id.
func TestListThreadsNewestFirst(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	set := func(hms string) {
		at, err := time.Parse(time.RFC3339, "2026-11-27T"+hms+"Z")
		if err != nil {
			t.Fatal(err)
		}
		now.Store(at.UnixNano())
	}
	s, err := OpenSQLite(t.TempDir(), Options{Now: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names, ids := map[string]string{}, map[string]string{}
	create := func(name, hms string) string {
		set(hms)
		th, err := s.CreateThread(ctx, memory.CreateThreadParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		names[th.ID], ids[name] = name, th.ID
		return th.ID
	}
	patch := func(id, hms string) {
		set(hms)
		if _, err := s.PatchState(ctx, id, factPatch(1), 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	a := create("a", "10:00:05")
	create("b", "10:00:50")
	create("c", "10:01:10")
	create("d", "10:01:10")
	patch(a, "10:01:20")
	// Within the minute 10:01: the larger of c's and d's ids written last, so neither id
	// order nor creation order gives the listing.
	hi, lo := "c", "d"
	if ids["d"] > ids["c"] {
		hi, lo = "d", "c"
	}
	patch(ids[hi], "10:01:30")
	create("e", "09:59:59") // a clock set back: still ordered by the time written
	create("f", "10:02:00")
	create("g", "10:02:00") // the same instant as f: id order
	fg := "f g"
	if ids["g"] < ids["f"] {
		fg = "g f"
	}
	list, err := s.ListThreads(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range list {
		got = append(got, names[th.ID])
	}
	if want := fg + " " + hi + " a " + lo + " b e"; strings.Join(got, " ") != want {
		t.Errorf("listing %q, want %q", strings.Join(got, " "), want)
	}
	two, err := s.ListThreads(ctx, 2)
	if err != nil || len(two) != 2 || two[0].ID != list[0].ID || two[1].ID != list[1].ID {
		t.Errorf("first two: %d threads, %v", len(two), err)
	}
}
