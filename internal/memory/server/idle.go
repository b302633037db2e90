package server

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/execpages"
	"github.com/relaydev/relay/internal/memory"
)

// releaseAfter is how long the daemon waits with no request before it gives memory back:
// long enough that a burst's next request finds its caches warm, short enough that a
// daemon left running on a laptop holds little within seconds of its last work.
const releaseAfter = 5 * time.Second

// idleWatch notes when the daemon last saw a request, so one goroutine can tell when it
// has gone quiet. A request costs two clock reads, two atomic stores and two non-blocking
// sends (at its start and its end), most of them on a full channel.
type idleWatch struct {
	activity atomic.Uint64 // touches so far
	last     atomic.Int64  // when the latest touch happened, in nanoseconds after epoch
	epoch    time.Time     // carries the monotonic clock
	wake     chan struct{} // holds a token when there was activity since the last release
}

func newIdleWatch() *idleWatch { return &idleWatch{epoch: time.Now(), wake: make(chan struct{}, 1)} }

func (w *idleWatch) now() time.Duration { return time.Since(w.epoch) }

func (w *idleWatch) touch() {
	w.last.Store(int64(w.now()))
	w.activity.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// track marks a request's start and end as activity (an event stream counts when it opens
// and when it closes, not while it waits).
func (w *idleWatch) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.touch()
		defer w.touch()
		next.ServeHTTP(rw, r)
	})
}

// run calls release once after every stretch of activity, quiet after its last request;
// release reports false when it could not yet (it is tried again after another quiet
// stretch). It returns when ctx ends. The stretch is timed from the latest touch itself,
// not from when this goroutine noticed it: it used to count from a count of touches read
// when it woke, and a request's closing touch landing after that read put the release off
// by a whole second quiet stretch (TestIdleRelease failed so under -race).
func (w *idleWatch) run(ctx context.Context, quiet time.Duration, release func(context.Context) bool) {
	t := time.NewTimer(quiet)
	t.Stop()
	for {
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		}
		var notBefore time.Duration // after a refused release: another quiet stretch first
		for {
			if wait := max(time.Duration(w.last.Load())+quiet, notBefore) - w.now(); wait > 0 {
				t.Reset(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
				continue
			}
			select { // the tokens sent up to now are for activity this stretch covers
			case <-w.wake:
			default:
			}
			if time.Duration(w.last.Load())+quiet > w.now() {
				continue // a request came while the token was taken
			}
			if release(ctx) {
				break
			}
			notBefore = w.now() + quiet
		}
	}
}

// releaseMemory gives back what the store's caches and, in the daemon's own process, the
// Go heap hold beyond what is live (the collector otherwise returns it only gradually).
func (s *Server) releaseMemory(ctx context.Context) bool {
	if r, ok := s.store.(memory.MemoryReleaser); ok {
		done, err := r.ReleaseMemory(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("releasing the store's memory while idle failed", "err", err)
		}
		if !done {
			return false
		}
	}
	if ownsProcess() {
		debug.FreeOSMemory()
		dropCode(s.log, "idle")
	}
	s.log.Debug("released memory while idle")
	return true
}

// dropCode releases the resident copy of the daemon's code (execpages): what it runs next
// maps back in from the page cache. Only the daemon's own process does it.
func dropCode(log *slog.Logger, after string) {
	if st, err := execpages.Drop(); err != nil {
		log.Warn("releasing the code's pages failed", "err", err)
	} else {
		log.Debug("released the code's pages", "after", after, "mappings", st.Mappings, "bytes", st.Bytes, "kept", st.Kept)
	}
}
