// Package backend owns the friend CLIs relay ask talks to: how each one is
// invoked (argv, environment, working directory, stdin) for a sandbox mode and
// model, and how its output, tokens, cost and failures are read back.
package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Sandbox modes, as spelled by the seed and by codex.
const (
	ReadOnly         = "read-only"
	WorkspaceWrite   = "workspace-write"
	DangerFullAccess = "danger-full-access"
)

// AllSandboxes is every mode, sorted as the unknown-sandbox error lists them.
var AllSandboxes = []string{DangerFullAccess, ReadOnly, WorkspaceWrite}

// Request is one question to one friend. Prompt is the finished envelope.
type Request struct {
	Prompt  string
	Repo    string // absolute path; the child's working directory
	Sandbox string
	Model   string
	Timeout time.Duration
	// Env is the child's full environment (the depth guard has already added
	// PHONE_A_FRIEND_DEPTH+1); backends add or drop only their own variables.
	Env     []string
	Session Session
	// Euid lets the claude backend refuse danger mode as root before spawning.
	Euid int
	// Schema, when set, is the JSON Schema the answer must match; a friend
	// with native structured output is given it (codex --output-schema,
	// claude --json-schema).
	Schema json.RawMessage
	// OnEvent, when set, receives the friend's events as they happen (from
	// several goroutines' worth of output, but one call at a time).
	OnEvent func(Event)
}

// Session asks a backend to start or continue a native conversation.
type Session struct {
	ID      string // codex thread id, claude/gemini session UUID
	Resume  bool   // continue ID instead of starting it
	Persist bool   // keep the conversation on the CLI's side at all
}

// Result is what a friend answered and what it reported about the call.
type Result struct {
	Answer       string
	Model        string // as reported by the CLI; empty when unknown
	InputTokens  *int64
	OutputTokens *int64
	CostUSD      *float64
	SessionID    string // native id to resume this conversation later
	// Structured is the JSON value a friend returned through its native
	// structured output (claude's --json-schema); nil otherwise.
	Structured json.RawMessage
}

// Backend is one friend.
type Backend interface {
	Name() string
	// Executable is the program looked up on PATH ("" for HTTP backends).
	Executable() string
	InstallHint() string
	Sandboxes() []string
	// SupportsSessions reports whether --session can continue a conversation.
	SupportsSessions() bool
	Run(ctx context.Context, req Request) (Result, error)
}

// Kind classifies a backend failure so the CLI can pick a remediation.
type Kind int

const (
	KindFailed            Kind = iota // non-zero exit or error reply
	KindNotFound                      // executable not on PATH
	KindNotLoggedIn                   // the CLI has no credentials
	KindTimeout                       // killed after the timeout
	KindEmpty                         // finished without an answer
	KindUnreachable                   // the friend (or its model) cannot be reached
	KindRefused                       // relay refused before spawning (unsafe combination)
	KindUnsupportedClient             // the account's sign-in is refused for this CLI
	KindQuota                         // the account is out of quota
	KindPromptNotRead                 // the CLI never read the prompt from stdin
	KindTooMuchOutput                 // more output than relay keeps
	KindCancelled                     // relay itself was interrupted
	KindInvalidAnswer                 // the answer does not match the requested schema
)

// Error is every failure a backend returns: Message keeps the CLI's own
// detail, Hint says what to do next.
type Error struct {
	Backend  string
	Kind     Kind
	Message  string
	Hint     string
	ExitCode int // for KindFailed from a process; 0 otherwise
}

func (e *Error) Error() string { return e.Message }

// aliases are other names a backend answers to.
var aliases = map[string]string{"antigravity": "agy"}

// Canonical returns the backend name behind an alias (or name itself).
func Canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// Names lists every backend, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the named backend with the default process runner.
func Get(name string) (Backend, bool) {
	mk, ok := registry[Canonical(name)]
	if !ok {
		return nil, false
	}
	return mk(Options{}), true
}

// New returns the named backend with injected seams (tests).
func New(name string, opts Options) (Backend, bool) {
	mk, ok := registry[Canonical(name)]
	if !ok {
		return nil, false
	}
	return mk(opts), true
}

var registry = map[string]func(Options) Backend{
	"codex":    func(o Options) Backend { return &cliBackend{spec: codexSpec{}, opts: o.withDefaults()} },
	"gemini":   func(o Options) Backend { return &cliBackend{spec: geminiSpec{}, opts: o.withDefaults()} },
	"claude":   func(o Options) Backend { return &cliBackend{spec: claudeSpec{}, opts: o.withDefaults()} },
	"qwen":     func(o Options) Backend { return &cliBackend{spec: qwenSpec{}, opts: o.withDefaults()} },
	"opencode": func(o Options) Backend { return &cliBackend{spec: opencodeSpec{}, opts: o.withDefaults()} },
	"agy":      func(o Options) Backend { return &cliBackend{spec: agySpec{}, opts: o.withDefaults()} },
	"ollama":   func(o Options) Backend { return newOllama(o.withDefaults()) },
}

// InstallHints maps each backend to the command that installs it.
func InstallHint(name string) string {
	if b, ok := Get(name); ok {
		return b.InstallHint()
	}
	return ""
}

// setEnv returns env with key set to value (replacing any earlier entries).
func setEnv(env []string, key, value string) []string {
	out := dropEnv(env, key)
	return append(out, key+"="+value)
}

// dropEnv returns a copy of env without the given keys.
func dropEnv(env []string, keys ...string) []string {
	out := make([]string, 0, len(env)+1)
next:
	for _, kv := range env {
		for _, k := range keys {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// lookupEnv reads key from an environment slice (last entry wins, as exec does).
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func secs(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
}

func ptr[T any](v T) *T { return &v }
