package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/relaydev/relay/internal/memory/blobgc"
)

// bucketSweeper is a store whose artifact bodies may be in a bucket it can sweep.
type bucketSweeper interface {
	SweepBlobs(ctx context.Context, opt blobgc.Options) (blobgc.Report, error)
}

// Automatic sweeps: the first a while after start (so a daemon restarted in a loop does not
// list the bucket each time), then at a steady interval. Every daemon of a shared store
// schedules them; the store lets one sweep at a time.
var (
	sweepFirst = 10 * time.Minute
	sweepEvery = 6 * time.Hour
)

// sweepBucket runs the bucket's garbage collection in the background until the server
// closes; grace 0 is blobgc.DefaultGrace.
func (s *Server) sweepBucket(grace time.Duration) {
	sw, ok := s.store.(bucketSweeper)
	if !ok {
		return
	}
	t := time.NewTimer(sweepFirst)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		go func() { // the server's end cancels a sweep in progress
			select {
			case <-s.done:
			case <-ctx.Done():
			}
			cancel()
		}()
		rep, err := sw.SweepBlobs(ctx, blobgc.Options{Grace: grace})
		cancel()
		switch {
		case errors.Is(err, blobgc.ErrNoBucket):
			return
		case errors.Is(err, blobgc.ErrBusy):
		case err != nil:
			s.log.Warn("artifact bucket sweep failed", "err", err)
		default:
			s.log.Info("artifact bucket swept", "objects", rep.Objects, "orphans", rep.Orphans, "deleted", rep.Deleted,
				"deleted_bytes", rep.DeletedBytes, "kept_young", rep.Young, "kept_pinned", rep.Pinned)
		}
		t.Reset(sweepEvery)
	}
}

// handleGC is GET /store/gc (a report: what a sweep would delete) and POST /store/gc (a
// sweep), with ?grace=DURATION (default 24h) and, on POST, ?dry_run=1.
func (s *Server) handleGC(w http.ResponseWriter, r *http.Request) error {
	sw, ok := s.store.(bucketSweeper)
	if !ok {
		return &apiError{Status: http.StatusConflict, Code: "no_bucket", Msg: blobgc.ErrNoBucket.Error()}
	}
	opt := blobgc.Options{DryRun: r.Method == http.MethodGet}
	if v := r.URL.Query().Get("grace"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return badRequest("grace=%q must be a duration like 24h or 30m (0 keeps nothing back)", v)
		}
		opt.Grace = d
		if d == 0 {
			opt.Grace = -1 // blobgc's "none"; its 0 is the default
		}
	}
	if v := r.URL.Query().Get("dry_run"); v == "1" || v == "true" {
		opt.DryRun = true
	}
	rep, err := sw.SweepBlobs(r.Context(), opt)
	switch {
	case errors.Is(err, blobgc.ErrNoBucket):
		return &apiError{Status: http.StatusConflict, Code: "no_bucket", Msg: err.Error()}
	case errors.Is(err, blobgc.ErrBusy):
		w.Header().Set("Retry-After", "60")
		return &apiError{Status: http.StatusConflict, Code: "sweep_running", Msg: err.Error()}
	case errors.Is(err, blobgc.ErrShared):
		return &apiError{Status: http.StatusConflict, Code: "shared_bucket", Msg: err.Error(), Extra: map[string]any{"report": rep}}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
