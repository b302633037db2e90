package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
)

// The PostgreSQL restart tests run two daemon processes on a server of the test's own
// (pgtest.Private) and stop it with `pg_ctl stop -m fast` (every client disconnected, open
// transactions rolled back) or `-m immediate` (the server killed like a crash, the WAL
// replayed at the next start) while 8 writers, half on each daemon, add facts and
// artifacts. They wait on conditions with deadlines, never on sleeps.

// restartRig is two daemons on a private PostgreSQL and a thread they share.
type restartRig struct {
	t      *testing.T
	pg     *pgtest.Server
	cmds   []*exec.Cmd
	cs     []teamClient
	thread memory.Thread
}

func newRestartRig(t *testing.T) *restartRig {
	if testing.Short() {
		t.Skip("starts PostgreSQL and daemon processes")
	}
	pg := pgtest.Private(t)
	url, err := pg.CreateDB(context.Background(), "relay_restart")
	if err != nil {
		t.Fatal(err)
	}
	r := &restartRig{t: t, pg: pg}
	hc := &http.Client{Timeout: 30 * time.Second}
	for range 2 {
		cmd, u := startDaemonProcess(t, t.TempDir(), url)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		r.cmds = append(r.cmds, cmd)
		r.cs = append(r.cs, teamClient{t, u, hc})
	}
	code, _, body, err := r.cs[0].do("POST", "/threads", []byte(`{"name":"restart"}`))
	if err != nil || code != 201 {
		t.Fatalf("create thread: %d %v", code, err)
	}
	if err := json.Unmarshal(body, &r.thread); err != nil {
		t.Fatal(err)
	}
	return r
}

// writeLog is what the writers saw.
type writeLog struct {
	mu        sync.Mutex
	facts     map[string]bool   // acknowledged fact ids
	artifacts map[string]string // acknowledged artifact ref -> content
	acks      []int             // per writer, acknowledged writes
	failures  int               // 503 answers
	bad       []string          // anything but 2xx, 409 or 503 with Retry-After
}

func (l *writeLog) badf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bad = append(l.bad, fmt.Sprintf(format, a...))
}

// unavailable checks a 503: Retry-After and the unavailable code; anything else is bad.
func (l *writeLog) unavailable(what string, code int, hdr http.Header, body []byte) bool {
	if code != http.StatusServiceUnavailable {
		return false
	}
	if hdr.Get("Retry-After") == "" || !strings.Contains(string(body), `"unavailable"`) {
		l.badf("%s: 503 without Retry-After or code unavailable: %s", what, body)
	}
	l.mu.Lock()
	l.failures++
	l.mu.Unlock()
	return true
}

// pause is the writers' back-off after a 503: far below the Retry-After a real client
// honours, so the test spends its time restarting, not waiting.
const pause = 20 * time.Millisecond

// addFact adds fact id through c and returns once it is acknowledged. After a 503 it reads
// the state first, since the failed attempt may have been applied (its answer lost with the
// connection): a careful client never applies a write twice.
func (l *writeLog) addFact(ctx context.Context, c teamClient, tid, id string) bool {
	for ctx.Err() == nil {
		code, hdr, b, err := c.do("GET", "/threads/"+tid+"/state", nil)
		if err != nil {
			l.badf("read state through %s: %v", c.url, err)
			return false
		}
		if l.unavailable("read state", code, hdr, b) {
			time.Sleep(pause)
			continue
		}
		if code != 200 {
			l.badf("read state: %d %s", code, b)
			return false
		}
		if strings.Contains(string(b), `"id":"`+id+`"`) {
			return true // an attempt answered 503 was applied after all
		}
		etag := strings.Trim(hdr.Get("ETag"), `"`)
		code, hdr, b, err = c.do("POST", "/threads/"+tid+"/state/patch",
			[]byte(`[{"op":"add","path":"/facts/-","value":{"id":"`+id+`","key":"k","value":1}}]`), "If-Match", etag)
		switch {
		case err != nil:
			l.badf("patch through %s: %v", c.url, err)
			return false
		case code == 200:
			return true
		case code == 409:
		case l.unavailable("patch", code, hdr, b):
			time.Sleep(pause)
		default:
			l.badf("patch %s: %d %s", id, code, b)
			return false
		}
	}
	return false
}

// putArtifact stores content through c; a put of the same bytes is deduplicated, so it is
// safe to repeat after a 503.
func (l *writeLog) putArtifact(ctx context.Context, c teamClient, tid, content string) (string, bool) {
	for ctx.Err() == nil {
		code, hdr, b, err := c.do("POST", "/threads/"+tid+"/artifacts", []byte(`{"name":"note.md","content":`+strconv.Quote(content)+`}`))
		if err != nil {
			l.badf("put through %s: %v", c.url, err)
			return "", false
		}
		if l.unavailable("put", code, hdr, b) {
			time.Sleep(pause)
			continue
		}
		if code != 201 && code != 200 {
			l.badf("put: %d %s", code, b)
			return "", false
		}
		var a memory.Artifact
		if err := json.Unmarshal(b, &a); err != nil || a.Ref == "" {
			l.badf("put answer %s: %v", b, err)
			return "", false
		}
		return a.Ref, true
	}
	return "", false
}

// write runs 8 writers, alternating daemons, each adding facts and every third write an
// artifact, until ctx ends.
func (r *restartRig) write(ctx context.Context, l *writeLog) *sync.WaitGroup {
	const writers = 8
	l.facts, l.artifacts, l.acks = map[string]bool{}, map[string]string{}, make([]int, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.cs[w%2]
			for i := 0; ctx.Err() == nil; i++ {
				if i%3 == 2 {
					content := fmt.Sprintf("# note %d of writer %d\n\nWritten while PostgreSQL restarts.\n", i, w)
					ref, ok := l.putArtifact(ctx, c, r.thread.ID, content)
					if !ok {
						return
					}
					l.mu.Lock()
					l.artifacts[ref] = content
					l.acks[w]++
					l.mu.Unlock()
					continue
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if !l.addFact(ctx, c, r.thread.ID, id) {
					return
				}
				l.mu.Lock()
				l.facts[id] = true
				l.acks[w]++
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eachAcked waits until every writer has n more acknowledged writes than in base.
func (l *writeLog) eachAcked(base []int, n int) func() bool {
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.bad) > 0 {
			return true // the caller reports them
		}
		for w, a := range l.acks {
			if a < base[w]+n {
				return false
			}
		}
		return true
	}
}

func (l *writeLog) snapshot() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// follower follows the thread's events through one daemon with the Go client (which
// reconnects with Last-Event-ID and waits out 503s) and records the ids it receives.
type follower struct {
	mu   sync.Mutex
	ids  []int64
	done chan error
}

func follow(ctx context.Context, url, tid string, after int64) *follower {
	f := &follower{done: make(chan error, 1)}
	c := &client.Client{BaseURL: url, HTTP: &http.Client{}}
	go func() {
		f.done <- c.Stream(ctx, tid, after, func(e memory.Event) error {
			f.mu.Lock()
			f.ids = append(f.ids, e.ID)
			f.mu.Unlock()
			return nil
		})
	}()
	return f
}

func (f *follower) last() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ids) == 0 {
		return 0
	}
	return f.ids[len(f.ids)-1]
}

// events lists every event of the thread after id after, through c.
func (r *restartRig) events(c teamClient, after int64) []int64 {
	var ids []int64
	for {
		code, _, b, err := c.do("GET", fmt.Sprintf("/threads/%s/events?after=%d&limit=1000", r.thread.ID, after), nil)
		if err != nil || code != 200 {
			r.t.Fatalf("list events: %d %v %s", code, err, b)
		}
		var out struct{ Events []memory.Event }
		if err := json.Unmarshal(b, &out); err != nil {
			r.t.Fatal(err)
		}
		if len(out.Events) == 0 {
			return ids
		}
		for _, e := range out.Events {
			ids = append(ids, e.ID)
		}
		after = ids[len(ids)-1]
	}
}

// restartUnderLoad stops PostgreSQL in mode under load, checks that while it is down both
// daemons answer 503 with Retry-After (reads and writes, never 500) and stay up, starts it
// again, and checks that both serve again within seconds, that every acknowledged write is
// there exactly once through both, and that event followers on both, one of them started
// while the database was down, saw every event once, in order.
func restartUnderLoad(t *testing.T, mode string) {
	r := newRestartRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var followers []*follower
	for _, c := range r.cs {
		followers = append(followers, follow(ctx, c.url, r.thread.ID, r.thread.LastEventID))
	}
	wctx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	var l writeLog
	wg := r.write(wctx, &l)
	waitFor(t, time.Minute, "3 acknowledged writes per writer before the restart", l.eachAcked(make([]int, 8), 3))

	if err := r.pg.Stop(mode); err != nil {
		t.Fatal(err)
	}
	// While no server answers: reads and writes get 503 + Retry-After from both daemons,
	// which stay up (health, status), and a new follower waits for the store.
	for _, c := range r.cs {
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/threads/" + r.thread.ID + "/state", ""},
			{"GET", "/threads/" + r.thread.ID + "/state/header", ""},
			{"POST", "/threads/" + r.thread.ID + "/state/patch", `[{"op":"add","path":"/facts/-","value":{"id":"down","key":"k","value":1}}]`},
			{"POST", "/threads/" + r.thread.ID + "/artifacts", `{"content":"written while the database is down"}`},
		} {
			code, hdr, b, err := c.do(req.method, req.path, []byte(req.body))
			if err != nil || code != 503 || hdr.Get("Retry-After") != "1" || !strings.Contains(string(b), `"unavailable"`) {
				t.Fatalf("%s %s through %s with the database down: %d %q %v (want 503, Retry-After: 1)", req.method, req.path, c.url, code, b, err)
			}
		}
		if code, _, b, err := c.do("GET", "/status", nil); err != nil || code != 200 || !strings.Contains(string(b), "store_error") {
			t.Fatalf("status through %s with the database down: %d %s %v", c.url, code, b, err)
		}
	}
	followers = append(followers, follow(ctx, r.cs[0].url, r.thread.ID, followers[0].last()))
	resumedFrom := followers[0].last()
	base := l.snapshot()

	if err := r.pg.StartAgain(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	// Both daemons serve again without a restart: a write through each within seconds.
	for i, c := range r.cs {
		var wl writeLog
		if !wl.addFact(ctx, c, r.thread.ID, fmt.Sprintf("after-%d", i)) || len(wl.bad) > 0 {
			t.Fatalf("write through daemon %d after the restart: %v", i, wl.bad)
		}
		l.mu.Lock()
		l.facts[fmt.Sprintf("after-%d", i)] = true
		l.mu.Unlock()
	}
	if d := time.Since(up); d > 10*time.Second {
		t.Fatalf("the daemons served again %s after PostgreSQL accepted connections, want within seconds", d)
	}
	t.Logf("pg_ctl stop -m %s: both daemons served writes %s after the server was back", mode, time.Since(up).Round(time.Millisecond))
	waitFor(t, time.Minute, "3 acknowledged writes per writer after the restart", l.eachAcked(base, 3))
	stopWriters()
	wg.Wait()
	if len(l.bad) > 0 {
		t.Fatalf("%d answers other than 2xx, 409 or 503 with Retry-After, first: %s", len(l.bad), l.bad[0])
	}
	t.Logf("%d writes acknowledged, %d answered 503 by the daemons", len(l.facts)+len(l.artifacts), l.failures)

	for _, c := range r.cs {
		_, seen := factIDs(t, c, r.thread.ID)
		for id := range l.facts {
			if seen[id] != 1 {
				t.Fatalf("acknowledged fact %s appears %d times through %s", id, seen[id], c.url)
			}
		}
		for ref, content := range l.artifacts {
			code, _, b, err := c.do("GET", "/threads/"+r.thread.ID+"/artifacts/"+ref+"?raw=1", nil)
			if err != nil || code != 200 || string(b) != content {
				t.Fatalf("acknowledged artifact %s through %s: %d %q %v", ref, c.url, code, b, err)
			}
		}
	}

	all := r.events(r.cs[0], r.thread.LastEventID)
	for i, f := range followers {
		want := all
		if i == len(followers)-1 {
			want = all[slices.Index(all, resumedFrom)+1:]
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("follower %d receives every event", i), func() bool { return f.last() >= all[len(all)-1] })
		f.mu.Lock()
		got := slices.Clone(f.ids)
		f.mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("follower %d received %d events, the log has %d from its start: a gap or a duplicate", i, len(got), len(want))
		}
	}
	cancel()
	for _, f := range followers {
		if err := <-f.done; err != context.Canceled {
			t.Fatalf("follower ended with %v", err)
		}
	}
}

// TestPostgresRestartFast: pg_ctl restart -m fast under 8 writers on two daemons.
func TestPostgresRestartFast(t *testing.T) { restartUnderLoad(t, "fast") }

// TestPostgresStopImmediate: the failover-like stop, pg_ctl stop -m immediate (the server
// dies without a shutdown checkpoint and replays its WAL), then a start, under 8 writers.
func TestPostgresStopImmediate(t *testing.T) { restartUnderLoad(t, "immediate") }

// TestPostgresRestartListen: after a restart each daemon listens again for the others'
// events. Once daemon B reports its notification connection made again, an event written
// through A reaches a follower of B within seconds, far sooner than B's 15-second ping
// would make it read: only the notification can have woken it.
func TestPostgresRestartListen(t *testing.T) {
	r := newRestartRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := r.cs[0], r.cs[1]
	listen := func() memory.ListenInfo {
		code, _, body, err := b.do("GET", "/status", nil)
		if err != nil || code != 200 {
			t.Fatalf("status of B: %d %v", code, err)
		}
		var st struct{ Listen *memory.ListenInfo }
		if err := json.Unmarshal(body, &st); err != nil || st.Listen == nil {
			t.Fatalf("status of B has no listen state: %s", body)
		}
		return *st.Listen
	}
	if l := listen(); !l.Connected || l.Reconnects != 0 {
		t.Fatalf("B before the restart: %+v", l)
	}
	f := follow(ctx, b.url, r.thread.ID, r.thread.LastEventID)
	if err := r.pg.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "B notices the lost connection", func() bool { return !listen().Connected })
	if err := r.pg.StartAgain(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "B listens again", func() bool { l := listen(); return l.Connected && l.Reconnects == 1 })
	for i := range 3 {
		sent := time.Now()
		var ev memory.Event
		for {
			code, hdr, body, err := a.do("POST", "/threads/"+r.thread.ID+"/events", []byte(`{"type":"note.added","data":{"n":`+strconv.Itoa(i)+`}}`))
			if err != nil {
				t.Fatal(err)
			}
			var wl writeLog
			if wl.unavailable("append event", code, hdr, body) && len(wl.bad) == 0 {
				time.Sleep(pause) // A's pool may still be reconnecting
				continue
			}
			if code != 201 || json.Unmarshal(body, &ev) != nil {
				t.Fatalf("append event through A: %d %s", code, body)
			}
			break
		}
		waitFor(t, 5*time.Second, "B's follower receives an event written through A", func() bool { return f.last() >= ev.ID })
		t.Logf("event %d reached B's follower %s after it was written through A", i, time.Since(sent).Round(time.Millisecond))
	}
}
