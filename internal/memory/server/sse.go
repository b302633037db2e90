package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// pingEvery keeps proxies and idle timeouts from closing quiet streams.
var pingEvery = 15 * time.Second

// streamGather is how long a woken stream lets commits gather before it reads them: a
// capability call commits its result and then its record, and a stream that read the
// events after each commit took a tenth of a search call's CPU through relay mcp (whose
// session follows its thread). Followers see events at most this much later.
var streamGather = 10 * time.Millisecond

func asConflict(err error, target **memory.ConflictError) bool { return errors.As(err, target) }

// handleStream serves a thread's events as Server-Sent Events, resuming after Last-Event-ID.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var after int64
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badRequest("Last-Event-ID %q must be an event id (a non-negative integer)", v)
		}
		after = n
	} else {
		n, err := intParam(r, "after", 0, 0)
		if err != nil {
			return err
		}
		after = n
	}
	if err := s.threadExists(r.Context(), id); err != nil {
		return err
	}
	// Subscribe before the first read so no event falls between read and wait.
	wake, cancel := s.store.Subscribe(id)
	defer cancel()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	gather := time.NewTimer(streamGather)
	gather.Stop()
	defer gather.Stop()
	var wait time.Duration // backoff while the store is unavailable
	for {
		evs, err := s.store.Events(r.Context(), id, after, 500)
		if err != nil && r.Context().Err() == nil && memory.IsTransient(s.store, err) {
			// The database is restarting: keep the stream and read again once it answers,
			// so the follower sees no gap and no error (a browser's EventSource would not
			// reconnect after a 503).
			if wait == 0 {
				s.log.Warn("event stream waiting for the store", "thread", id, "err", err)
			}
			wait = min(max(2*wait, 50*time.Millisecond), time.Second)
			select {
			case <-time.After(wait):
				continue
			case <-ping.C:
				if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
					return nil
				}
				continue
			case <-r.Context().Done():
				return nil
			case <-s.done:
				return nil
			}
		}
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Error("event stream read failed", "thread", id, "err", err)
			}
			return nil // headers are sent; the client reconnects with Last-Event-ID
		}
		wait = 0
		for _, e := range evs {
			b, _ := json.Marshal(e)
			if _, err := w.Write(sseFrame(strconv.FormatInt(e.ID, 10), e.Type, b)); err != nil {
				return nil
			}
			after = e.ID
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		if len(evs) == 500 {
			continue
		}
		select {
		case <-wake:
			gather.Reset(streamGather)
			select {
			case <-gather.C:
			case <-r.Context().Done():
				return nil
			case <-s.done:
				return nil
			}
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		case <-s.done:
			return nil
		}
	}
}

// sseFrame builds one Server-Sent Events frame. A CR or LF inside a field
// would end it and start another, letting stored text forge events: id and
// event are refused (an event type that is not a valid name is sent as
// "invalid"; the JSON in data still carries it exactly), and data is split
// into one "data:" line per line, which a client joins back with "\n".
func sseFrame(id, event string, data []byte) []byte {
	if !memory.ValidEventType(event) {
		event = "invalid"
	}
	if strings.ContainsAny(id, "\r\n\x00") {
		id = ""
	}
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + event + "\n")
	for _, line := range strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.Bytes()
}
