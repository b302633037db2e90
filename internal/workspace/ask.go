package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/ask/ledger"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/safeopen"
)

// The events an ask with a thread appends (the thread's ledger, see ledger.EventAnswered).
const (
	EventAskAnswered = ledger.EventAnswered
	EventAskFailed   = ledger.EventFailed
)

// askAuthor is the created_by of what an ask stores in a thread.
const askAuthor = "relay ask"

// askContextRefBytes: a context file larger than this is stored in the thread and sent as
// a ref the friend reads when it needs it, instead of being pasted into the envelope.
const askContextRefBytes = 4096

// AskRequest is a question for one or more friends. Zero To and Sandbox and a timeout not
// given take phone-a-friend's defaults from PHONE_A_FRIEND_BACKEND, _SANDBOX and
// _TIMEOUT, and a request for no diff takes PHONE_A_FRIEND_INCLUDE_DIFF; Env and WorkDir
// default to the workspace's.
type AskRequest struct {
	ask.Request
	// TimeoutGiven says TimeoutSeconds was given, even as 0 (which ask refuses);
	// otherwise it is PHONE_A_FRIEND_TIMEOUT, else ask.DefaultTimeout.
	TimeoutGiven bool
	// HasMCP says relay's tools may be registered for the friend (the envelope says so).
	HasMCP bool
	// Job is the background job this ask runs as (relay ask --background): its start and
	// end are events in the thread, so the UI shows it live.
	Job string
}

// AskResult is the friends' answers and, with a thread, where each went.
type AskResult struct {
	Answers []ask.Answer
	// Records[i] is where Answers[i] is stored in the thread; nil when it is not.
	Records []*AnswerRecord
	// Thread is the thread the ask was recorded in ("" when none).
	Thread string
	// PriorVerdicts are the verdicts already stored on this exact diff, cited
	// in the envelope by ref; VerdictRefs[i] is where Answers[i]'s verdict went.
	PriorVerdicts []memory.Artifact
	VerdictRefs   []string
}

// AnswerRecord is where one answer went in the thread.
type AnswerRecord struct {
	Ref       string `json:"ref"`
	Preview   string `json:"preview"`
	Truncated bool   `json:"truncated"`
}

// ShortRef is the answer's ref (the daemon gives the one form relay shows).
func (r *AnswerRecord) ShortRef() string { return r.Ref }

// Ask asks the friends. With a thread (named, $RELAY_THREAD or the project's), the friend
// gets the thread's header and reads refs instead of pasted context, and every answer is
// stored as an artifact with an ask.answered event. A thread the caller named must work;
// one it did not name is skipped with one warning when the daemon is out of reach.
func (w *Workspace) Ask(ctx context.Context, req AskRequest) (*AskResult, error) {
	if err := w.AskDefaults(&req); err != nil {
		return nil, err
	}
	if err := w.checkAsk(&req); err != nil {
		return nil, err
	}
	asker := w.Asker
	if asker == nil {
		var store *ask.SessionStore
		if home, err := w.home(); err == nil && home != "" {
			store = &ask.SessionStore{Dir: filepath.Join(home, relayhome.AskDir)}
		}
		asker = ask.New(store)
	}
	mem, err := w.askMemory(ctx, &req)
	if err != nil {
		return nil, err
	}
	if mem != nil && req.Job != "" {
		_, _ = mem.c.AppendEvent(ctx, mem.thread, "ask.job.started", map[string]any{"job": req.Job, "to": req.To})
		defer func() {
			_, _ = mem.c.AppendEvent(context.WithoutCancel(ctx), mem.thread, "ask.job.finished", map[string]any{"job": req.Job})
		}()
	}
	p, err := asker.Prepare(ctx, req.Request)
	if err != nil {
		return nil, err
	}
	var prior []memory.Artifact
	if mem != nil && p.DiffSHA256 != "" {
		if prior, err = PriorVerdicts(ctx, mem.c, mem.thread, p.DiffSHA256); err != nil {
			w.notef("Warning: could not look for earlier verdicts in thread %s: %v", mem.thread, FirstLine(err.Error()))
		} else if len(prior) > 0 {
			if err := p.AddNote("Earlier Verdicts", VerdictNote(prior)); err != nil {
				return nil, err
			}
		}
	}
	res := &AskResult{Answers: asker.Run(ctx, p), PriorVerdicts: prior}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if mem != nil {
		res.Thread = mem.thread
		res.Records = mem.record(ctx, w, req.Prompt, res.Answers)
		res.VerdictRefs = make([]string, len(res.Answers))
		for i, a := range res.Answers {
			if a.Err != nil || a.Verdict == nil || p.DiffSHA256 == "" {
				continue
			}
			art, err := RecordVerdict(ctx, mem.c, mem.thread, p.DiffSHA256, a)
			if err != nil {
				w.notef("Warning: the verdict of %s was not stored in thread %s: %v", a.Backend, mem.thread, FirstLine(err.Error()))
				continue
			}
			res.VerdictRefs[i] = art.Ref
		}
	}
	return res, nil
}

// AskDefaults fills what the request leaves to phone-a-friend's environment variables
// (Ask does it too; a front door that needs the friends' names first calls it before).
func (w *Workspace) AskDefaults(req *AskRequest) error {
	r := &req.Request
	if len(r.To) == 0 {
		r.To = []string{"codex"}
		if v := strings.TrimSpace(w.getenv("PHONE_A_FRIEND_BACKEND")); v != "" {
			r.To = strings.Split(v, ",")
		}
	}
	if r.Sandbox == "" {
		r.Sandbox = strings.TrimSpace(w.getenv("PHONE_A_FRIEND_SANDBOX"))
	}
	if !req.TimeoutGiven {
		r.TimeoutSeconds = ask.DefaultTimeout
		if v := strings.TrimSpace(w.getenv("PHONE_A_FRIEND_TIMEOUT")); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return &ask.Error{Message: fmt.Sprintf("PHONE_A_FRIEND_TIMEOUT=%q is not a whole number of seconds", v), Hint: w.askTimeoutHint(), Usage: true}
			}
			r.TimeoutSeconds = n
		}
	}
	if !r.IncludeDiff && r.DiffBase == "" {
		v := strings.ToLower(strings.TrimSpace(w.getenv("PHONE_A_FRIEND_INCLUDE_DIFF")))
		r.IncludeDiff = v == "1" || v == "true"
	}
	if r.Env == nil {
		r.Env = w.environ()
	}
	if r.WorkDir == "" {
		r.WorkDir = w.WorkDir
	}
	return nil
}

func (w *Workspace) askTimeoutHint() string {
	if w.Principal == Agent {
		return `unset it or pass "timeout"`
	}
	return "unset it or pass --timeout SECONDS"
}

// askThread is an ask connected to its thread.
type askThread struct {
	c          *client.Client
	thread     string
	version    int
	contextRef string // the stored context file, when it was too large to paste
}

// askMemory connects the ask to its thread: the envelope gets the thread's header and
// how to read refs instead of pasted context; a large context file becomes an artifact.
// It returns nil (and the ask runs without memory) when no thread is set, or when the
// thread was not named by the caller and cannot be reached (one warning line).
func (w *Workspace) askMemory(ctx context.Context, req *AskRequest) (*askThread, error) {
	if w.Memory == nil {
		return nil, nil
	}
	arg, explicit, err := w.Memory.DefaultArg(w.Thread)
	if arg == "" && err == nil && !w.Memory.CreateThread {
		return nil, nil
	}
	orig := req.Request
	var m *askThread
	if err == nil {
		m, err = w.connectAsk(ctx, req)
	}
	if err != nil {
		if explicit {
			return nil, err
		}
		req.Request = orig
		w.notef("Warning: not recording this ask in thread %s: %v", arg, FirstLine(err.Error()))
		return nil, nil
	}
	return m, nil
}

func (w *Workspace) connectAsk(ctx context.Context, req *AskRequest) (*askThread, error) {
	id, err := w.Memory.DefaultThread(ctx, w.Thread, true)
	if err != nil || id == "" {
		return nil, err
	}
	c, err := w.Memory.Client(ctx, false)
	if err != nil {
		return nil, err
	}
	m := &askThread{c: c, thread: id}
	if req.ContextFile != "" {
		if err := m.storeContext(ctx, &req.Request); err != nil {
			return nil, err
		}
	}
	header, _, err := c.Header(ctx, id)
	if err != nil {
		return nil, MemoryError(err, id)
	}
	var hv struct {
		V int `json:"v"`
	}
	_ = json.Unmarshal(header, &hv)
	m.version = hv.V
	req.Memory = m.envelopeSection(header, req.HasMCP)
	// The friend's own relay commands then need no --thread.
	req.Env = append(req.Env, "RELAY_THREAD="+id)
	return m, nil
}

// storeContext stores a context file above the threshold and drops it from the request.
func (m *askThread) storeContext(ctx context.Context, req *ask.Request) error {
	path := req.ContextFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(req.WorkDir, path)
	}
	fi, err := os.Stat(path)
	// the stat bound holds here too: a file ask would refuse as too large is never read
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= askContextRefBytes || fi.Size() > ask.MaxContextFileBytes {
		return nil // small, too large, or a problem ask itself reports in its own words
	}
	b, err := safeopen.ReadFile(path, true, ask.MaxContextFileBytes)
	if err != nil {
		return nil
	}
	if req.ContextText != "" {
		return nil // ask refuses both; let it say so
	}
	a, err := m.c.PutArtifact(ctx, m.thread, client.PutArtifactParams{Name: filepath.Base(path), CreatedBy: askAuthor, Content: bytes.NewReader(b)})
	if err != nil {
		return MemoryError(err, m.thread)
	}
	m.contextRef = a.Ref
	req.ContextFile = ""
	return nil
}

// envelopeSection is what the friend reads about the thread: how to dereference refs, the
// header, and the stored context.
func (m *askThread) envelopeSection(header []byte, hasMCP bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This question belongs to relay thread %s, which holds the shared memory (state and artifacts).\n", m.thread)
	b.WriteString("Read what you need by ref instead of asking for pasted text; these commands work in your shell (RELAY_THREAD is set):\n")
	b.WriteString("  relay artifact get REF --out -   the full content of an artifact\n")
	b.WriteString("  relay state get                  the full state document\n")
	if hasMCP {
		b.WriteString("If the relay MCP server (relay mcp) is registered for you, its tools read the same refs.\n")
	}
	b.WriteString("Thread header (refs are \"<ref> <name>\"):\n")
	b.Write(bytes.TrimSpace(header))
	if m.contextRef != "" {
		fmt.Fprintf(&b, "\nThe context for this question is stored as artifact %s; read it with:\n  relay artifact get %s --out -", m.contextRef, m.contextRef)
	}
	return b.String()
}

// record stores each answer as an artifact and an ask.answered event. Memory is a record
// of the ask, not the ask itself: a failure to record is one warning line, never a failed
// ask.
func (m *askThread) record(ctx context.Context, w *Workspace, prompt string, answers []ask.Answer) []*AnswerRecord {
	out := make([]*AnswerRecord, len(answers))
	for i, a := range answers {
		if a.Err != nil {
			data := map[string]any{"backend": a.Backend, "prompt": ClipRunes(strings.TrimSpace(prompt), 280),
				"failure": a.FailureKind(), "error": ClipRunes(a.Err.Message, 280), "duration_ms": a.Duration.Milliseconds()}
			if a.Model != "" {
				data["model"] = a.Model
			}
			if _, err := m.c.AppendEvent(ctx, m.thread, EventAskFailed, data); err != nil {
				w.notef("Warning: the ask was not logged in thread %s: %v", m.thread, FirstLine(err.Error()))
			}
			continue
		}
		art, err := m.c.PutArtifact(ctx, m.thread, client.PutArtifactParams{
			Name: "ask-" + a.Backend + ".md", Type: "markdown", CreatedBy: askAuthor,
			SourceRefs: refsOf(m.contextRef), Content: strings.NewReader(a.Text),
		})
		if err != nil {
			w.notef("Warning: the answer of %s was not stored in thread %s: %v", a.Backend, m.thread, FirstLine(err.Error()))
			continue
		}
		out[i] = &AnswerRecord{Ref: art.Ref, Preview: art.Preview.Text, Truncated: art.Preview.Truncated}
		data := map[string]any{"backend": a.Backend, "prompt": ClipRunes(strings.TrimSpace(prompt), 280),
			"answer_ref": art.Ref, "duration_ms": a.Duration.Milliseconds(), "state_version": m.version}
		if a.Model != "" {
			data["model"] = a.Model
		}
		if a.InputTokens != nil {
			data["input_tokens"] = *a.InputTokens
		}
		if a.OutputTokens != nil {
			data["output_tokens"] = *a.OutputTokens
		}
		if a.CostUSD != nil {
			data["cost_usd"] = *a.CostUSD
		}
		if m.contextRef != "" {
			data["context_ref"] = m.contextRef
		}
		if _, err := m.c.AppendEvent(ctx, m.thread, EventAskAnswered, data); err != nil {
			w.notef("Warning: the ask was not logged in thread %s: %v", m.thread, FirstLine(err.Error()))
		}
	}
	return out
}

// refsOf returns the full refs behind short ones the thread can resolve; a short context
// ref is not a source ref the store accepts, so it is left out rather than guessed.
func refsOf(ref string) []string {
	if len(ref) == 26 {
		return []string{ref}
	}
	return nil
}
