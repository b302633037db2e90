package backend

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// EventKind says what one of a friend's events is.
type EventKind string

const (
	// EventStatus is what the friend is doing: started, waiting for its
	// model, thinking, running a tool.
	EventStatus EventKind = "status"
	// EventText is a piece of the friend's answer, in order.
	EventText EventKind = "text"
	// EventWarning is a problem the friend reported and is retrying (a
	// dropped connection, a rate limit).
	EventWarning EventKind = "warning"
)

// Event is one thing a friend did, read from its output while it runs.
// Text is the friend's own words (hostile: escape before printing).
type Event struct {
	Backend string    `json:"backend"`
	Kind    EventKind `json:"kind"`
	Text    string    `json:"text"`
	Time    time.Time `json:"time"`
}

// String names a kind in the ledger and in --json.
func (k Kind) String() string {
	switch k {
	case KindNotFound:
		return "not-found"
	case KindNotLoggedIn:
		return "not-logged-in"
	case KindTimeout:
		return "timeout"
	case KindEmpty:
		return "empty"
	case KindUnreachable:
		return "unreachable"
	case KindRefused:
		return "refused"
	case KindUnsupportedClient:
		return "unsupported-client"
	case KindQuota:
		return "quota"
	case KindPromptNotRead:
		return "prompt-not-read"
	case KindTooMuchOutput:
		return "too-much-output"
	case KindCancelled:
		return "cancelled"
	case KindInvalidAnswer:
		return "invalid-answer"
	}
	return "failed"
}

// diagnose recognises a friend's message that no amount of waiting fixes;
// KindFailed means nothing was recognised. lower is the message in lower case.
func diagnose(lower string) Kind {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(lower, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("unsupported_client", "client is no longer supported", "no longer supported for gemini code assist"):
		return KindUnsupportedClient
	case notLoggedIn(lower):
		return KindNotLoggedIn
	case has("quota exceeded", "exceeded your current quota", "insufficient_quota", "usage limit", "hit your limit",
		"credit balance is too low", "out of credits", "quota_exhausted"):
		return KindQuota
	case networkDown(lower):
		return KindUnreachable
	}
	return KindFailed
}

// networkDown: the friend's request never reached a server (DNS, routing,
// refused connection), as each CLI words it.
func networkDown(lower string) bool {
	for _, s := range []string{"waiting for network", "name does not resolve", "failed to lookup address",
		"could not resolve host", "enotfound", "eai_again", "getaddrinfo", "network is unreachable",
		"connection refused", "econnrefused", "fetch failed", "error sending request", "no route to host",
		"dns error", "connection error", "enetunreach", "ehostunreach", "no such host"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// hintFor is the next step for a failure a stream recognised.
func hintFor(backend string, k Kind) string {
	switch k {
	case KindUnreachable:
		return fmt.Sprintf("%s cannot reach its model: check the network connection (and any proxy or base URL it is set to use), then ask again; relay stopped it instead of waiting for the timeout", backend)
	case KindNotLoggedIn:
		return loginHint(backend)
	case KindUnsupportedClient:
		return unsupportedClientHint
	case KindQuota:
		return fmt.Sprintf("%s's account is out of quota: wait for the limit to reset, raise it, or ask another friend (relay backends lists them)", backend)
	}
	return ""
}

// unsupportedClientHint: since 2026-06-18 Gemini CLI refuses personal Google
// sign-in (reason UNSUPPORTED_CLIENT); an API key or Antigravity still works.
const unsupportedClientHint = "Gemini CLI no longer accepts a personal Google sign-in: ask Antigravity instead (relay ask --to agy …), " +
	"or give gemini an API key (GEMINI_API_KEY, with \"security.auth.selectedType\": \"gemini-api-key\" in ~/.gemini/settings.json)"

// maxNetworkRetries: once a friend has talked to its model, a network error
// may be a blip its own retry heals; this many in a row with nothing else in
// between end the ask.
const maxNetworkRetries = 3

// stream is what relay knows about one run while it happens: the events it
// has passed on, whether the model has answered anything, and a failure
// that ends the run early.
type stream struct {
	backend    string
	emit       func(Event)
	now        func() time.Time
	progressed bool // the model produced something: output, a tool call
	netErrs    int  // network errors since the last progress
	fatal      *Error
	last       Event // the last status or warning: what the friend last did
}

func newStream(backend string, emit func(Event)) *stream {
	return &stream{backend: backend, emit: emit, now: time.Now}
}

func (s *stream) send(kind EventKind, text string) {
	ev := Event{Backend: s.backend, Kind: kind, Text: text, Time: s.now()}
	if kind != EventText {
		ev.Text = summary(text)
		s.last = ev
	}
	if s.emit != nil {
		s.emit(ev)
	}
}

// status records what the friend is doing.
func (s *stream) status(text string) { s.send(EventStatus, text) }

// text passes on a piece of the answer.
func (s *stream) text(t string) {
	if t == "" {
		return
	}
	s.progress()
	s.send(EventText, t)
}

// progress notes that the model produced something.
func (s *stream) progress() { s.progressed, s.netErrs = true, 0 }

// problem reads an error the friend reported while running: one that waiting
// cannot fix ends the run, anything else is passed on as a warning.
func (s *stream) problem(msg string) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return
	}
	switch k := diagnose(strings.ToLower(msg)); k {
	case KindUnreachable:
		s.network(msg)
	case KindFailed:
		s.send(EventWarning, msg)
	default:
		s.fail(k, msg)
	}
}

// network handles a request that never reached a server: fatal before the
// model has answered anything (nothing will come), otherwise after
// maxNetworkRetries in a row.
func (s *stream) network(msg string) {
	s.netErrs++
	if !s.progressed || s.netErrs >= maxNetworkRetries {
		s.fail(KindUnreachable, msg)
		return
	}
	s.send(EventWarning, msg)
}

// fail ends the run with the friend's own message.
func (s *stream) fail(k Kind, msg string) {
	if s.fatal != nil {
		return
	}
	s.send(EventWarning, msg)
	s.fatal = &Error{Backend: s.backend, Kind: k, Message: clipDetail(strings.TrimSpace(msg)), Hint: hintFor(s.backend, k)}
}

// summary is one line of at most 200 characters: what a status line shows.
func summary(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 200 {
		r := []rune(s)
		s = string(r[:199]) + "…"
	}
	return s
}

// clipDetail keeps the end of a long message: that is where the cause is.
func clipDetail(msg string) string {
	if len(msg) > maxDetail {
		cut := len(msg) - maxDetail
		for cut < len(msg) && !utf8.RuneStart(msg[cut]) {
			cut++
		}
		msg = "…" + msg[cut:]
	}
	return msg
}

// stderrProblem reads a line a CLI logged on stderr: a failure waiting cannot
// fix ends the run, a retry or error is a warning, anything else (colour and
// ripgrep notices, stack frames) is noise.
func stderrProblem(s *stream, line string) {
	line = strings.TrimSpace(line)
	lower := strings.ToLower(line)
	switch {
	case line == "":
	case diagnose(lower) != KindFailed:
		s.problem(line)
	case strings.Contains(lower, "retrying") || strings.HasPrefix(lower, "error"):
		s.send(EventWarning, line)
	}
}
