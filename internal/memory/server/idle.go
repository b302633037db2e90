package server

import (
	"context"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// releaseAfter is how long the daemon waits with no request before it gives memory back:
// long enough that a burst's next request finds its caches warm, short enough that a
// daemon left running on a laptop holds little within seconds of its last work.
const releaseAfter = 5 * time.Second

// idleWatch counts requests so one goroutine can tell when the daemon has gone quiet.
// A request costs two atomic adds and two non-blocking sends (at its start and its end),
// most of them on a full channel.
type idleWatch struct {
	activity atomic.Uint64
	wake     chan struct{} // holds a token when there was activity since the last release
}

func newIdleWatch() *idleWatch { return &idleWatch{wake: make(chan struct{}, 1)} }

func (w *idleWatch) touch() {
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

// run calls release once after every stretch of activity, as soon as quiet has passed with
// no request; release reports false when it could not yet (it is tried again after another
// quiet stretch). It returns when ctx ends.
func (w *idleWatch) run(ctx context.Context, quiet time.Duration, release func(context.Context) bool) {
	t := time.NewTimer(quiet)
	t.Stop()
	for {
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		}
		for {
			seen := w.activity.Load()
			t.Reset(quiet)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			select { // the tokens sent up to now are for activity this stretch covers
			case <-w.wake:
			default:
			}
			if w.activity.Load() == seen && release(ctx) {
				break
			}
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
	}
	s.log.Debug("released memory while idle")
	return true
}
