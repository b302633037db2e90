package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/safeopen"
)

// askContextRefBytes: a --context-file larger than this is stored in the thread and sent as
// a ref the friend reads when it needs it, instead of being pasted into the envelope.
const askContextRefBytes = 4096

// askAuthor is the created_by of what relay ask stores in a thread.
const askAuthor = "relay ask"

// EventAskAnswered is the event an ask with a thread appends for each answer.
const EventAskAnswered = "ask.answered"

// askMemory is an ask that records into a thread.
type askMemory struct {
	c          *client.Client
	thread     string
	version    int
	contextRef string // the stored --context-file, when it was too large to paste
}

// askThread picks the ask's thread: --thread, else $RELAY_THREAD. explicit says the user
// named it on the command line (then a daemon that is down is an error, not a warning).
func askThread(opts *AskOptions) (arg string, explicit bool) {
	if opts.Thread != "" {
		return opts.Thread, true
	}
	return opts.Getenv("RELAY_THREAD"), false
}

// setupAskMemory connects the ask to its thread: the envelope gets the thread's header and
// how to read refs instead of pasted context; a large --context-file becomes an artifact.
// It returns nil (and the ask runs without memory) when no thread is set, or when the
// thread came from the environment and the daemon cannot be reached (one warning line).
func setupAskMemory(ctx context.Context, opts *AskOptions, req *ask.Request) (*askMemory, error) {
	arg, explicit := askThread(opts)
	if arg == "" {
		return nil, nil
	}
	orig := *req
	m, err := connectAskMemory(ctx, opts, req, arg)
	if err != nil {
		if explicit {
			return nil, err
		}
		*req = orig
		fmt.Fprintf(opts.IO.ErrOut, "Warning: not recording this ask in thread %s: %v\n", arg, firstLine(err.Error()))
		return nil, nil
	}
	return m, nil
}

func connectAskMemory(ctx context.Context, opts *AskOptions, req *ask.Request, arg string) (*askMemory, error) {
	c, id, err := opts.ThreadClient(ctx, arg)
	if err != nil {
		return nil, err
	}
	m := &askMemory{c: c, thread: id}
	if req.ContextFile != "" {
		if err := m.storeContext(ctx, req); err != nil {
			return nil, err
		}
	}
	header, _, err := c.Header(ctx, id)
	if err != nil {
		return nil, apiErr(err, id)
	}
	var hv struct {
		V int `json:"v"`
	}
	_ = json.Unmarshal(header, &hv)
	m.version = hv.V
	req.Memory = m.envelopeSection(header, opts.HasMCP)
	// The friend's own relay commands then need no --thread.
	req.Env = append(req.Env, "RELAY_THREAD="+id)
	return m, nil
}

// storeContext stores a --context-file above the threshold and drops it from the request.
func (m *askMemory) storeContext(ctx context.Context, req *ask.Request) error {
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
		return apiErr(err, m.thread)
	}
	m.contextRef = a.Ref
	req.ContextFile = ""
	return nil
}

// envelopeSection is what the friend reads about the thread: how to dereference refs, the
// header, and the stored context.
func (m *askMemory) envelopeSection(header []byte, hasMCP bool) string {
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

// askRecord is where one answer went in the thread.
type askRecord struct {
	Ref       string `json:"ref"`
	Preview   string `json:"preview"`
	Truncated bool   `json:"truncated"`
}

// record stores each answer as an artifact and an ask.answered event. Memory is a record of
// the ask, not the ask itself: a failure to record is one warning line, never a failed ask.
func (m *askMemory) record(ctx context.Context, opts *AskOptions, answers []ask.Answer) []*askRecord {
	out := make([]*askRecord, len(answers))
	for i, a := range answers {
		if a.Err != nil {
			continue
		}
		art, err := m.c.PutArtifact(ctx, m.thread, client.PutArtifactParams{
			Name: "ask-" + a.Backend + ".md", Type: "markdown", CreatedBy: askAuthor,
			SourceRefs: refsOf(m.contextRef), Content: strings.NewReader(a.Text),
		})
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "Warning: the answer of %s was not stored in thread %s: %v\n", a.Backend, m.thread, firstLine(err.Error()))
			continue
		}
		rec := &askRecord{Ref: art.Ref, Preview: art.Preview.Text, Truncated: art.Preview.Truncated}
		out[i] = rec
		data := map[string]any{"backend": a.Backend, "prompt": clipRunes(strings.TrimSpace(opts.Prompt), 280),
			"answer_ref": art.Ref, "duration_ms": a.Duration.Milliseconds(), "state_version": m.version}
		if a.Model != "" {
			data["model"] = a.Model
		}
		if m.contextRef != "" {
			data["context_ref"] = m.contextRef
		}
		if err := appendEvent(ctx, m.c, m.thread, EventAskAnswered, data); err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "Warning: the ask was not logged in thread %s: %v\n", m.thread, firstLine(err.Error()))
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

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// appendEvent records a client event in the thread.
func appendEvent(ctx context.Context, c *client.Client, thread, typ string, data any) error {
	_, err := c.AppendEvent(ctx, thread, typ, data)
	return err
}
