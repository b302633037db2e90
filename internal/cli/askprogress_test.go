package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/iostreams"
)

// On a terminal the status line names each friend, the time and its last
// event, escaped, redrawn in place and erased at the end.
func TestAskProgressStatusLine(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(false, false, true)
	p := newAskProgress(ios, []string{"codex", "antigravity"}, false, false)
	now := time.Now()
	p.event(backend.Event{Backend: "codex", Kind: backend.EventStatus, Text: "running `go test`", Time: now})
	p.event(backend.Event{Backend: "agy", Kind: backend.EventWarning, Text: "retrying\x1b[31m", Time: now})
	p.event(backend.Event{Backend: "codex", Kind: backend.EventText, Text: "secret answer", Time: now})
	p.finish()
	got := errOut.String()
	for _, want := range []string{"\r\x1b[K0s · codex: running `go test` · agy: starting",
		"· agy: ⚠ retrying\\x1b[31m", "codex: writing the answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("status line lacks %q:\n%q", want, got)
		}
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the line is not erased at the end: %q", got)
	}
	if strings.Contains(got, "secret answer") || out.Len() != 0 {
		t.Errorf("answer text leaked without --stream: stderr %q stdout %q", got, out.String())
	}
}

// Without a terminal nothing is drawn; --stream writes the text and ends it
// with a newline.
func TestAskProgressStreamNoTTY(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	p := newAskProgress(ios, []string{"claude"}, true, false)
	p.event(backend.Event{Backend: "claude", Kind: backend.EventStatus, Text: "thinking"})
	p.event(backend.Event{Backend: "claude", Kind: backend.EventText, Text: "one "})
	p.event(backend.Event{Backend: "claude", Kind: backend.EventText, Text: "two"})
	p.finish()
	if errOut.Len() != 0 || out.String() != "one two\n" || !p.streamed {
		t.Fatalf("stderr %q stdout %q", errOut.String(), out.String())
	}
}
