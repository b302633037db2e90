package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"
)

// TestIdleRelease: memory is released once per stretch of requests, releaseAfter after the
// last one, never while requests keep coming, and again after another quiet stretch when
// the store was not ready. Time is synctest's, so the test waits for nothing real.
func TestIdleRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newIdleWatch()
		var releases, refuse atomic.Int32
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.run(ctx, releaseAfter, func(context.Context) bool {
				if refuse.Load() > 0 {
					refuse.Add(-1)
					return false
				}
				releases.Add(1)
				return true
			})
		}()
		h := w.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		request := func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/health", nil)) }
		want := func(n int32, when string) {
			t.Helper()
			synctest.Wait()
			if got := releases.Load(); got != n {
				t.Fatalf("%s: %d releases, want %d", when, got, n)
			}
		}

		time.Sleep(time.Hour)
		want(0, "an hour without a request")
		request()
		time.Sleep(releaseAfter - time.Millisecond)
		want(0, "just before releaseAfter")
		time.Sleep(2 * time.Millisecond)
		want(1, "just after releaseAfter")
		time.Sleep(time.Hour)
		want(1, "an hour later (one release per stretch)")

		for range 20 {
			request()
			time.Sleep(releaseAfter / 2)
		}
		want(1, "requests every releaseAfter/2")
		time.Sleep(releaseAfter)
		want(2, "releaseAfter after they stopped")

		refuse.Store(1) // the store still busy (its index catching up) the first time
		request()
		time.Sleep(releaseAfter + time.Millisecond)
		want(2, "a refused release")
		time.Sleep(releaseAfter)
		want(3, "another quiet stretch later")

		cancel()
		<-done
	})
}

// TestHandlerCountsActivity: every request through the daemon's handler is activity, and
// a server with a SQLite store releases its memory through it.
func TestHandlerCountsActivity(t *testing.T) {
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(Options{Store: st})
	defer s.Close() // its background goroutines hold threads of their own
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/health", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /health: %d %s", rec.Code, rec.Body)
	}
	if n := s.idle.activity.Load(); n != 2 {
		t.Fatalf("activity after one request: %d, want 2 (its start and its end)", n)
	}
	if !s.releaseMemory(t.Context()) {
		t.Fatal("an idle store's memory was not released")
	}
}
