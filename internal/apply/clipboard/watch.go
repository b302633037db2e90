package clipboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/relaydev/relay/internal/run"
)

// Watch calls onChange with every new clipboard text until ctx is done. The
// text already on the clipboard when Watch starts is not reported. Read
// errors go to onError (repeats of the same error are dropped) and watching
// goes on. With change events (wl-paste --watch, X11 XFixes) the clipboard is
// read only when it changes; otherwise, or when the events stop, it is
// polled every interval.
func Watch(ctx context.Context, t *Tool, interval time.Duration, onChange func(string), onError func(error)) error {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	w := &watcher{t: t, onChange: onChange, onError: onError}
	w.last, _ = w.read(ctx)
	if t.Notify != nil || len(t.Watch) > 0 {
		var err error
		if t.Notify != nil {
			err = t.Notify(ctx, func() { w.checkRetry(ctx) })
		} else {
			err = w.events(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		// The event source failed or died (no XFixes, compositor restart, …): keep going by polling.
		w.report(fmt.Errorf("clipboard change events unavailable (%v); polling every %s instead", err, interval))
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			w.check(ctx)
		}
	}
}

type watcher struct {
	t        *Tool
	last     string
	lastErr  string
	onChange func(string)
	onError  func(error)
}

func (w *watcher) read(ctx context.Context) (string, error) {
	text, err := ReadWith(ctx, w.t)
	if err != nil {
		if ctx.Err() == nil {
			w.report(err)
		}
		return "", err
	}
	w.lastErr = ""
	return text, nil
}

func (w *watcher) report(err error) {
	if err == nil || w.onError == nil || err.Error() == w.lastErr {
		return
	}
	w.lastErr = err.Error()
	w.onError(err)
}

// checkRetry is check for event-driven watching: no poll follows, so a failed
// read is tried again a few times before the change is given up.
func (w *watcher) checkRetry(ctx context.Context) {
	for attempt := 0; attempt < 3; attempt++ {
		if w.check(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// check reads the clipboard and reports new text; false means the read failed.
func (w *watcher) check(ctx context.Context) bool {
	text, err := w.read(ctx)
	if err != nil {
		return false
	}
	// An empty read (cleared clipboard, or a writer caught mid-update) is not
	// a change: the same text copied again is not new.
	if text == "" || text == w.last {
		return true
	}
	w.last = text
	w.onChange(text)
	return true
}

// events runs the tool's watch command and checks the clipboard on every
// line it prints, until it exits or ctx is done.
func (w *watcher) events(ctx context.Context) error {
	pr, pw := io.Pipe()
	c := run.Command(ctx, w.t.Watch[0], w.t.Watch[1:]...)
	c.Stdout = pw
	done := make(chan error, 1)
	go func() {
		err := c.Run()
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		w.checkRetry(ctx)
	}
	return <-done
}
