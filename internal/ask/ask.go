// Package ask is relay's phone-a-friend core: it validates a request in a fixed
// order with messages agents already parse, gathers context and the git diff
// under byte limits, builds the prompt envelope, applies the depth and host
// guards, and asks one or more friend backends in parallel.
package ask

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/ask/backend"
)

// Environment variables shared with phone-a-friend.
const (
	DepthEnv        = "PHONE_A_FRIEND_DEPTH"
	HostEnv         = "PHONE_A_FRIEND_HOST"
	DefaultMaxDepth = 1
	DefaultTimeout  = 600 // seconds
)

// Error is the one error type ask returns: Message is the stable text (or a
// backend's own detail), Hint is the next step.
type Error struct {
	Message string
	Hint    string
	Backend string       // set for backend failures
	Kind    backend.Kind // set for backend failures
	Usage   bool         // a bad flag or argument (the CLI exits 2)
}

func (e *Error) Error() string { return e.Message }

func errorf(hint, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Hint: hint}
}

// usagef is errorf for a mistake in the request itself.
func usagef(hint, format string, args ...any) *Error {
	e := errorf(hint, format, args...)
	e.Usage = true
	return e
}

// Request is one `relay ask`.
type Request struct {
	To             []string // backend names; one or more
	Prompt         string
	Repo           string // "" means WorkDir
	ContextFile    string
	ContextText    string
	IncludeDiff    bool   // unstaged changes
	DiffBase       string // REF...HEAD plus uncommitted changes
	Sandbox        string // "" means read-only
	Model          string
	TimeoutSeconds int
	MaxDepth       int
	Session        string // label; "" means a one-off question
	Env            []string
	WorkDir        string
	// Memory is a shared-memory section (a thread's header and artifact refs, with how to
	// read them) that the caller built; ask only places it in the envelope.
	Memory string
	// Schema is a JSON Schema the answer must match: enforced through the
	// friend's native structured output where it has one (codex, claude),
	// else by the instruction in the envelope, validation and one retry.
	Schema json.RawMessage
	// Verdict asks for VerdictSchema: approve or request-changes, with
	// findings naming file, line and severity. It sets its own schema.
	Verdict bool
	// Review asks for a review of the diff: DiffBase...HEAD plus uncommitted
	// changes, or with no DiffBase every uncommitted change (git diff HEAD).
	// The prompt may then be empty; a review prompt is used.
	Review bool
	// OnEvent, when set, receives every friend's events as they happen (what
	// it is doing, pieces of its answer, the problems it retries); calls for
	// different friends may come from different goroutines at once.
	OnEvent func(backend.Event)
}

// Asker holds the seams; the zero value is not usable, use New.
type Asker struct {
	Backend  func(name string) (backend.Backend, bool)
	Git      func(ctx context.Context, repo string, args ...string) (stdout string, err error)
	Sessions *SessionStore // nil: --session is refused
	Euid     int
	Now      func() time.Time
	// Ledger records every call (nil: none).
	Ledger *Ledger
}

// New returns an Asker with the real backends and git.
func New(sessions *SessionStore) *Asker {
	a := &Asker{Backend: backend.Get, Git: runGit, Sessions: sessions, Euid: os.Geteuid(), Now: time.Now}
	if sessions != nil && sessions.Dir != "" {
		a.Ledger = &Ledger{Path: filepath.Join(sessions.Dir, "ledger.jsonl")}
	}
	return a
}

// Target is one friend a prepared request will ask.
type Target struct {
	Name       string
	Backend    backend.Backend
	Env        []string
	Session    backend.Session
	NewSession bool // the label was unknown: a fresh conversation starts
}

// Prepared is a validated request: nothing has been spawned yet (only git).
type Prepared struct {
	Repo     string
	Envelope string
	Targets  []Target
	// DiffSHA256 is the hex SHA-256 of the diff sent ("" when none): a verdict
	// on unchanged code is found again by it.
	DiffSHA256 string
	req        Request
	schema     *schema
}

// AddNote appends a section to the envelope before Run (a prior verdict on
// the same diff, say), within the prompt limit.
func (p *Prepared) AddNote(title, text string) error {
	env := p.Envelope + "\n\n" + title + ":\n" + strings.TrimSpace(text)
	if n := len(env); n > MaxPromptBytes {
		return tooLarge("Relay prompt", n, MaxPromptBytes)
	}
	p.Envelope = env
	return nil
}

// DefaultReviewPrompt is the request of a --review without --prompt.
const DefaultReviewPrompt = "Review the changes in the Git Diff below as a careful senior reviewer: correctness, " +
	"security, error handling, tests, and anything that should block merging. Name the file and line of each finding."

// Answer is one friend's reply (or failure) and what the CLI reported.
type Answer struct {
	Backend      string
	Model        string
	Text         string
	Duration     time.Duration
	InputTokens  *int64
	OutputTokens *int64
	CostUSD      *float64
	Session      string
	NewSession   bool
	Err          *Error
	// JSON is the answer's JSON value when a schema was asked for, checked
	// against it; Verdict is that value read as a verdict (--verdict).
	JSON    json.RawMessage
	Verdict *Verdict
	// Retried: the first answer did not match the schema and the friend was asked once more.
	Retried bool
	// Failure is the kind of failure, for the ledger ("" when answered).
	Failure string
}

// ReviewScope applies what every front door means by a review: a base is a review of
// base...HEAD plus uncommitted changes, and a verdict is on a change: the uncommitted one
// unless a diff was named.
func (r *Request) ReviewScope(base string) {
	if base != "" {
		r.DiffBase, r.Review = base, true
	}
	if r.Verdict && !r.IncludeDiff && r.DiffBase == "" {
		r.Review = true
	}
}

func supported() string { return strings.Join(backend.Names(), ", ") }

// Prepare runs every check in its fixed order, then the guards.
func (a *Asker) Prepare(ctx context.Context, req Request) (*Prepared, error) {
	// 1-2: prompt and timeout
	if req.Review && strings.TrimSpace(req.Prompt) == "" {
		req.Prompt = DefaultReviewPrompt
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return nil, usagef("pass the question with --prompt TEXT (or --prompt - to read it from stdin)", "Prompt is required")
	}
	if req.TimeoutSeconds <= 0 {
		return nil, usagef("pass --timeout SECONDS greater than zero (default 600)", "Timeout must be greater than zero")
	}
	// 3: repository
	repo, err := resolveRepo(req.WorkDir, req.Repo)
	if err != nil {
		return nil, err
	}
	// 4-5: backends and sandbox
	sandbox := req.Sandbox
	if sandbox == "" {
		sandbox = backend.ReadOnly
	}
	names := dedupe(req.To)
	if len(names) == 0 {
		names = []string{""}
	}
	targets := make([]Target, 0, len(names))
	for _, n := range names {
		b, ok := a.Backend(n)
		if !ok {
			return nil, usagef("see which friends are installed: relay backends",
				"Unsupported relay backend: %s. Supported: %s", n, supported())
		}
		targets = append(targets, Target{Name: b.Name(), Backend: b})
	}
	if !slices.Contains(backend.AllSandboxes, sandbox) {
		return nil, usagef("pass --sandbox read-only, workspace-write or danger-full-access",
			"Invalid sandbox mode: %s. Allowed values: %s", sandbox, strings.Join(backend.AllSandboxes, ", "))
	}
	for _, t := range targets {
		allowed := slices.Sorted(slices.Values(t.Backend.Sandboxes()))
		if !slices.Contains(allowed, sandbox) {
			// a friend that cannot be given this much access says so, rather than running with less
			return nil, usagef(fmt.Sprintf("drop --sandbox for %s (it runs %s), or ask a friend that can write: %s",
				t.Name, strings.Join(allowed, ", "), strings.Join(writers(), ", ")),
				"%s is %s by design: relay cannot give it %s", t.Name, strings.Join(allowed, ", "), sandbox)
		}
	}
	// the model becomes an argument of the friend CLI: it must never look like a flag
	if req.Model != "" && !validModel(req.Model) {
		return nil, errorf("pass a model name such as --model gpt-5-codex (letters, digits and . _ : / @ + -, starting with a letter or digit)",
			"Invalid model name %q", req.Model)
	}
	// 6-7: context
	ctxText, err := resolveContext(req.WorkDir, req.ContextFile, req.ContextText)
	if err != nil {
		return nil, err
	}
	// structured answers
	var sch *schema
	switch {
	case req.Verdict && len(req.Schema) > 0:
		return nil, usagef("drop --schema: --verdict asks for its own", "--verdict sets its own schema; do not combine it with --schema")
	case req.Verdict:
		sch, err = parseSchema([]byte(VerdictSchema))
	case len(req.Schema) > 0:
		sch, err = parseSchema(req.Schema)
	}
	if err != nil {
		return nil, err
	}
	// 8: diff
	diff, err := a.collectDiff(ctx, repo, req)
	if err != nil {
		return nil, err
	}
	if req.Review && diff == "" {
		what := "uncommitted changes (git diff HEAD)"
		if req.DiffBase != "" {
			what = "changes against " + req.DiffBase + " (committed or not)"
		}
		return nil, errorf("commit or edit something first, or review a branch with --base REF", "Nothing to review: no %s", what)
	}
	prompt := req.Prompt
	if req.Verdict {
		prompt += "\n\nGive a verdict: approve only when nothing should block merging; otherwise request-changes. " +
			"List every finding with the file and line it concerns (line null when it is about a whole file) and its severity: blocker, major, minor or nit."
	}
	if sch != nil {
		prompt += "\n\n" + schemaInstruction(sch.raw)
	}
	// 9: envelope
	envelope := buildEnvelope(repo, prompt, strings.TrimSpace(req.Memory), ctxText, diff)
	if n := len(envelope); n > MaxPromptBytes {
		return nil, tooLarge("Relay prompt", n, MaxPromptBytes)
	}
	// 10: depth guard, before anything is spawned
	depthStr, ok := lookupEnv(req.Env, DepthEnv)
	if !ok {
		depthStr = "0"
	}
	depth, ok := ParseDepth(depthStr)
	if !ok {
		return nil, errorf("unset "+DepthEnv+" or set it to a plain number such as 0",
			"Relay depth limit reached; refusing nested relay invocation (%s=%q is not a plain non-negative integer, so it counts as over the limit)", DepthEnv, depthStr)
	}
	if depth >= req.MaxDepth {
		return nil, errorf("agents are calling each other recursively; answer this one yourself, or raise --max-depth if the nesting is intended",
			"Relay depth limit reached; refusing nested relay invocation")
	}
	// host guard: an agent never phones itself
	if host := DetectHost(req.Env); host != "" {
		for _, t := range targets {
			if t.Name == host {
				others := otherNames(host)
				return nil, errorf("pick another friend: relay ask --to "+others[0]+" … (relay backends lists them)",
					"%s is already the host of this relay invocation; choose another friend backend such as %s",
					host, strings.Join(others, ", "))
			}
		}
	}
	// sessions
	if req.Session != "" {
		if err := ValidateLabel(req.Session); err != nil {
			return nil, usagef("use a short label such as --session review-1", "Invalid session label: %v", err)
		}
		if a.Sessions == nil {
			return nil, errorf("set RELAY_HOME to a writable directory", "Sessions are unavailable: no relay home directory")
		}
	}
	for i := range targets {
		t := &targets[i]
		env := setEnv(req.Env, DepthEnv, strconv.Itoa(depth+1))
		t.Env = setEnv(env, HostEnv, t.Name)
		if req.Session == "" {
			continue
		}
		if !t.Backend.SupportsSessions() {
			return nil, errorf("drop --session, or ask "+strings.Join(sessionBackends(), ", "),
				"%s cannot continue a conversation; --session works with %s", t.Name, strings.Join(sessionBackends(), ", "))
		}
		e, err := a.Sessions.Lookup(req.Session, t.Name)
		if err != nil {
			return nil, errorf("check that $RELAY_HOME is readable", "Failed reading sessions: %v", err)
		}
		switch {
		case e != nil && e.Repo != repo:
			return nil, errorf(fmt.Sprintf("use another --session label, or --repo %s", e.Repo),
				"Session %q with %s belongs to repository %s, not %s", req.Session, t.Name, e.Repo, repo)
		case e != nil:
			t.Session = backend.Session{ID: e.NativeID, Resume: true, Persist: true}
		case t.Name == "codex":
			t.Session, t.NewSession = backend.Session{Persist: true}, true // codex names its own thread
		default:
			t.Session, t.NewSession = backend.Session{ID: uuid.NewString(), Persist: true}, true
		}
	}
	p := &Prepared{Repo: repo, Envelope: envelope, Targets: targets, req: withSandbox(req, sandbox), schema: sch}
	if diff != "" {
		sum := sha256.Sum256([]byte(diff))
		p.DiffSHA256 = hex.EncodeToString(sum[:])
	}
	return p, nil
}

func withSandbox(r Request, s string) Request { r.Sandbox = s; return r }

// Run asks every target in parallel and returns the answers in --to order.
func (a *Asker) Run(ctx context.Context, p *Prepared) []Answer {
	answers := make([]Answer, len(p.Targets))
	var wg sync.WaitGroup
	for i, t := range p.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = a.runOne(ctx, p, t)
		}()
	}
	wg.Wait()
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	_ = a.Ledger.Record(now(), answers) // a record of the ask, never a reason to fail it
	return answers
}

func (a *Asker) runOne(ctx context.Context, p *Prepared, t Target) Answer {
	start := time.Now()
	breq := backend.Request{
		Prompt: p.Envelope, Repo: p.Repo, Sandbox: p.req.Sandbox, Model: p.req.Model,
		Timeout: time.Duration(p.req.TimeoutSeconds) * time.Second,
		Env:     t.Env, Session: t.Session, Euid: a.Euid, OnEvent: p.req.OnEvent,
	}
	if p.schema != nil {
		breq.Schema = p.schema.raw
	}
	res, err := t.Backend.Run(ctx, breq)
	ans := Answer{Backend: t.Name, Duration: time.Since(start), Session: p.req.Session, NewSession: t.NewSession}
	if err == nil && p.schema != nil {
		if _, verr := p.schema.answerJSON(res); verr != nil && ctx.Err() == nil {
			// one more try, told what was wrong; a one-off turn, so a session keeps its history clean
			ans.Retried = true
			retry := breq
			retry.Prompt = p.Envelope + "\n\nYour previous answer did not match the required JSON Schema (" + clip(verr.Error(), 500) +
				"). Answer again with only the JSON value."
			retry.Session = backend.Session{} // a one-off turn: a --session keeps only its good answers
			res, err = t.Backend.Run(ctx, retry)
		}
	}
	ans.Duration = time.Since(start)
	if err != nil {
		ans.Err = fromBackend(t.Name, err)
		ans.Failure = ans.Err.Kind.String()
		return ans
	}
	if p.schema != nil {
		v, verr := p.schema.answerJSON(res)
		if verr != nil {
			ans.Text = res.Answer
			ans.Err = &Error{Backend: t.Name, Kind: backend.KindInvalidAnswer,
				Message: fmt.Sprintf("the answer of %s does not match the schema, even when asked again: %s", t.Name, clip(verr.Error(), 1000)),
				Hint:    "simplify the schema, or ask a friend with native structured output (codex, claude); the raw answer is in --json's answer"}
			ans.Failure = ans.Err.Kind.String()
			return ans
		}
		ans.JSON = v
		if p.req.Verdict {
			ans.Verdict, ans.JSON = deriveVerdict(v)
		}
		res.Answer = string(ans.JSON)
	}
	ans.Text, ans.Model = res.Answer, res.Model
	if ans.Model == "" {
		ans.Model = p.req.Model
	}
	ans.InputTokens, ans.OutputTokens, ans.CostUSD = res.InputTokens, res.OutputTokens, res.CostUSD
	if p.req.Session != "" && a.Sessions != nil {
		id := res.SessionID
		if id == "" {
			id = t.Session.ID
		}
		if id != "" {
			now := a.Now()
			if err := a.Sessions.Save(SessionEntry{Label: p.req.Session, Backend: t.Name, Repo: p.Repo, NativeID: id, UpdatedAt: now}); err != nil {
				ans.Err = errorf("check that $RELAY_HOME is writable; the answer above is complete",
					"Answer received but the session could not be saved: %v", err)
				ans.Err.Backend = t.Name
			}
		}
	}
	return ans
}

// answerJSON is the JSON value of a result: native structured output, else
// what the answer's text holds; checked against the schema.
func (s *schema) answerJSON(res backend.Result) (json.RawMessage, error) {
	v := res.Structured
	if len(v) == 0 {
		var err error
		if v, err = extractJSON(res.Answer); err != nil {
			return nil, err
		}
	}
	if err := s.check(v); err != nil {
		return nil, err
	}
	return v, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// fromBackend turns a backend failure into the one user-facing error type.
func fromBackend(name string, err error) *Error {
	var be *backend.Error
	if errors.As(err, &be) {
		return &Error{Message: be.Message, Hint: be.Hint, Backend: name, Kind: be.Kind}
	}
	return &Error{Message: err.Error(), Backend: name, Hint: "run the command again with RELAY_DEBUG=1 to see the command line"}
}

// Ask prepares and runs a request in one call.
func (a *Asker) Ask(ctx context.Context, req Request) ([]Answer, error) {
	p, err := a.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return a.Run(ctx, p), nil
}

func resolveRepo(workDir, repo string) (string, error) {
	if repo == "" {
		repo = "."
	}
	if !filepath.IsAbs(repo) {
		repo = filepath.Join(workDir, repo)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		abs = repo
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", errorf("pass --repo DIR with an existing directory (default: the current directory)",
			"Repository path does not exist or is not a directory: %s", abs)
	}
	return abs, nil
}

func resolveContext(workDir, file, text string) (string, error) {
	text = strings.TrimSpace(text)
	if file != "" && text != "" {
		return "", usagef("pass --context-file or --context-text, not both", "Use either context_file or context_text, not both")
	}
	if file != "" {
		path := file
		if !filepath.IsAbs(path) {
			path = filepath.Join(workDir, path)
		}
		fi, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", errorf("check the path given to --context-file", "Context file does not exist: %s", file)
			}
			return "", errorf("check the permissions of the file given to --context-file", "Failed reading context file: %v", err)
		}
		if !fi.Mode().IsRegular() {
			return "", errorf("pass a regular file to --context-file", "Context path is not a file: %s", file)
		}
		// Refuse by size before reading: a 3 GB file must not be loaded to learn it is
		// too large. The content limit applies after trimming, so allow some slack for
		// surrounding whitespace, and read through a LimitReader in case the file grows.
		if fi.Size() > maxContextFileBytes {
			return "", tooLarge("Context file", int(min(fi.Size(), math.MaxInt)), MaxContextBytes)
		}
		b, err := readAtMost(path, maxContextFileBytes)
		if err != nil {
			return "", errorf("check the permissions of the file given to --context-file", "Failed reading context file: %v", err)
		}
		if len(b) > maxContextFileBytes {
			return "", tooLarge("Context file", len(b), MaxContextBytes)
		}
		if !utf8.Valid(b) {
			return "", errorf("pass a UTF-8 text file to --context-file", "Failed reading context file: %s is not valid UTF-8 text", file)
		}
		content := strings.TrimSpace(string(b))
		if n := len(content); n > MaxContextBytes {
			return "", tooLarge("Context file", n, MaxContextBytes)
		}
		return content, nil
	}
	if n := len(text); n > MaxContextBytes {
		return "", tooLarge("Context text", n, MaxContextBytes)
	}
	return text, nil
}

// maxContextFileBytes is the most --context-file reads: the 200,000-byte content
// limit plus room for whitespace that trimming removes.
const maxContextFileBytes = 4 * MaxContextBytes

// MaxContextFileBytes is the largest context file anyone may read for an ask (a caller
// that stores it in a thread first holds to the same bound).
const MaxContextFileBytes = maxContextFileBytes

// readAtMost reads up to limit+1 bytes of path, so a caller sees "over the limit"
// without reading the rest.
func readAtMost(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		n = backend.Canonical(strings.TrimSpace(n))
		if n == "" { // "codex," is a typo, not a request for a nameless friend
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func otherNames(host string) []string {
	var out []string
	for _, n := range backend.Names() {
		if n != host {
			out = append(out, n)
		}
	}
	return out
}

// writers lists the friends that can be given workspace-write.
func writers() []string {
	var out []string
	for _, n := range backend.Names() {
		if b, _ := backend.Get(n); slices.Contains(b.Sandboxes(), backend.WorkspaceWrite) {
			out = append(out, n)
		}
	}
	return out
}

func sessionBackends() []string {
	var out []string
	for _, n := range backend.Names() {
		if b, _ := backend.Get(n); b.SupportsSessions() {
			out = append(out, n)
		}
	}
	return out
}

// DetectHost names the agent CLI relay runs inside, if any. An explicit
// PHONE_A_FRIEND_HOST wins; otherwise the markers each CLI sets for the
// commands it runs (never generic ones such as CODEX_HOME).
func DetectHost(env []string) string {
	if v, _ := lookupEnv(env, HostEnv); strings.TrimSpace(v) != "" {
		return strings.ToLower(strings.TrimSpace(v))
	}
	is := func(k, want string) bool { v, _ := lookupEnv(env, k); return v == want }
	has := func(k string) bool { v, _ := lookupEnv(env, k); return v != "" }
	switch {
	case is("CLAUDECODE", "1"):
		return "claude"
	case is("GEMINI_CLI", "1"):
		return "gemini"
	case is("QWEN_CODE", "1"):
		return "qwen"
	case is("OPENCODE", "1"):
		return "opencode"
	case has("CODEX_SANDBOX"), is("CODEX_SANDBOX_NETWORK_DISABLED", "1"):
		return "codex"
	}
	return ""
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
