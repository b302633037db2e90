package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/iostreams"
)

// askProgress shows what the friends are doing while relay waits for them:
// on a terminal one status line (friend, elapsed time, last event) redrawn
// in place; with --stream the answer's text as it arrives (or, with --json,
// every event as one JSON line).
type askProgress struct {
	mu       sync.Mutex
	errOut   io.Writer // raw stderr: the line is drawn with \r and erase
	out      io.Writer // where --stream text goes
	jsonOut  io.Writer // --stream --json: one event a line
	line     bool      // draw the status line (stderr is a terminal)
	stream   bool      // print text events
	start    time.Time
	order    []string
	last     map[string]string
	drawn    bool
	streamed bool // text has been printed: the line stays off from then on
	stop     chan struct{}
	done     chan struct{}
}

// statusLineMax keeps the line narrower than any terminal relay expects.
const statusLineMax = 100

func newAskProgress(ios *iostreams.IOStreams, friends []string, stream, jsonOut bool) *askProgress {
	p := &askProgress{errOut: iostreams.Raw(ios.ErrOut), out: ios.Out, line: ios.IsStderrTTY(), stream: stream,
		start: time.Now(), last: map[string]string{}}
	if stream && jsonOut {
		p.jsonOut, p.stream = iostreams.Raw(ios.Out), false
	}
	for _, f := range friends {
		p.order = append(p.order, backend.Canonical(f))
		p.last[backend.Canonical(f)] = "starting"
	}
	if p.line {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// event receives one friend's event (from any goroutine).
func (p *askProgress) event(ev backend.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jsonOut != nil {
		b, _ := json.Marshal(ev)
		p.jsonOut.Write(append(b, '\n'))
	}
	if ev.Kind == backend.EventText {
		if p.stream {
			p.clear()
			p.streamed = true
			io.WriteString(p.out, ev.Text)
		}
		if _, ok := p.last[ev.Backend]; ok && p.last[ev.Backend] != "writing the answer" {
			p.last[ev.Backend] = "writing the answer"
			p.draw()
		}
		return
	}
	p.last[ev.Backend] = ev.Text
	if ev.Kind == backend.EventWarning {
		p.last[ev.Backend] = "⚠ " + ev.Text
	}
	p.draw()
}

func (p *askProgress) tick() {
	defer close(p.done)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// draw redraws the status line; p.mu is held.
func (p *askProgress) draw() {
	if !p.line || p.streamed {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", time.Since(p.start).Round(time.Second))
	for _, f := range p.order {
		fmt.Fprintf(&b, " · %s: %s", f, iostreams.EscapeLine(p.last[f]))
	}
	s := b.String()
	if utf8.RuneCountInString(s) > statusLineMax {
		s = string([]rune(s)[:statusLineMax-1]) + "…"
	}
	fmt.Fprintf(p.errOut, "\r\x1b[K%s", s)
	p.drawn = true
}

// clear erases the status line; p.mu is held.
func (p *askProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.errOut, "\r\x1b[K")
		p.drawn = false
	}
}

// finish stops the line and leaves the terminal clean; streamed text gets
// its closing newline.
func (p *askProgress) finish() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if p.streamed {
		io.WriteString(p.out, "\n")
	}
}
