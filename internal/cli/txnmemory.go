package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/textdiff"
)

// Events a project's transactions leave in its memory thread.
const (
	EventTxnApplied    = "txn.applied"
	EventTxnRolledBack = "txn.rolled_back"
	EventTxnReverted   = "txn.reverted"
	EventTxnGitCommit  = "txn.git_committed"
)

// txnAuthor is the created_by of the diffs apply stores.
const txnAuthor = "relay apply"

// maxDiffFileBytes: a file larger than this is summarised in the stored diff, not diffed.
const maxDiffFileBytes = 1 << 20

// txnMemory records a project's transactions in its thread. Memory is a record, never a
// condition: when no thread is set nothing happens, and when the daemon cannot be reached
// the transaction still succeeds with one warning line.
type txnMemory struct {
	f      *Factory
	errOut io.Writer
	flag   string

	once   sync.Once
	c      *client.Client
	thread string
	warned bool
}

func newTxnMemory(f *Factory, errOut io.Writer, flag string) *txnMemory {
	return &txnMemory{f: f, errOut: errOut, flag: flag}
}

// connect resolves the thread once; false means do not record.
func (m *txnMemory) connect(ctx context.Context) bool {
	if m == nil {
		return false
	}
	m.once.Do(func() {
		arg, err := memoryThread(m.f, m.flag)
		if err != nil {
			m.warn(arg, err)
			return
		}
		if arg == "" {
			return
		}
		c, id, err := threadClient(ctx, m.f, arg)
		if err != nil {
			m.warn(arg, err)
			return
		}
		m.c, m.thread = c, id
	})
	return m.c != nil
}

func (m *txnMemory) warn(thread string, err error) {
	if m.warned {
		return
	}
	m.warned = true
	what := "the memory thread"
	if thread != "" {
		what = "thread " + thread
	}
	fmt.Fprintf(m.errOut, "Warning: not recorded in %s: %s\n", what, firstLine(err.Error()))
}

// recordTxn stores a committed transaction's diff as an artifact and appends its event.
func (m *txnMemory) recordTxn(ctx context.Context, typ, dir string, st *txn.State, extra map[string]any) {
	if st == nil || !m.connect(ctx) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	data := txnEventData(st)
	for k, v := range extra {
		data[k] = v
	}
	if d := txnDiff(dir, st); d != "" {
		a, err := m.c.PutArtifact(ctx, m.thread, client.PutArtifactParams{
			Name: "txn-" + shortID(st.UUID) + ".diff", Type: "text", CreatedBy: txnAuthor, Content: strings.NewReader(d)})
		if err != nil {
			m.warn(m.thread, err)
			return
		}
		data["diff_ref"] = a.Ref
	}
	if _, err := m.c.AppendEvent(ctx, m.thread, typ, data); err != nil {
		m.warn(m.thread, err)
	}
}

// recordEvent appends an event with no diff (a rollback, a git commit).
func (m *txnMemory) recordEvent(ctx context.Context, typ string, data map[string]any) {
	if !m.connect(ctx) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := m.c.AppendEvent(ctx, m.thread, typ, data); err != nil {
		m.warn(m.thread, err)
	}
}

// recordFailure logs a transaction that was rolled back.
func (m *txnMemory) recordFailure(ctx context.Context, err error) {
	var fail *txn.Failure
	if !errors.As(err, &fail) {
		return
	}
	data := map[string]any{"uuid": fail.UUID, "step": fail.Step, "error": clipRunes(firstLine(fail.Err.Error()), 280), "restored": nonNilStrings(fail.Restored)}
	m.recordEvent(ctx, EventTxnRolledBack, data)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// txnEventData is the event data of a transaction: what it was and which files it changed.
func txnEventData(st *txn.State) map[string]any {
	added, removed := 0, 0
	for _, f := range st.Files {
		added += f.Added
		removed += f.Removed
	}
	files := st.Files
	if files == nil {
		files = []txn.FileChange{}
	}
	d := map[string]any{"uuid": st.UUID, "files": files, "added": added, "removed": removed}
	if st.PromptSummary != "" {
		d["summary"] = clipRunes(st.PromptSummary, 280)
	}
	if st.GitCommitMsg != "" {
		d["git_commit_msg"] = clipRunes(st.GitCommitMsg, 280)
	}
	if st.RevertOf != "" {
		d["revert_of"] = st.RevertOf
	}
	return d
}

// txnDiff is the unified diff of a committed transaction: each touched file from its
// snapshot to what is on disk now. Paths come from the transaction record and are read
// through the project root, so nothing outside the project is read.
func txnDiff(dir string, st *txn.State) string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return ""
	}
	defer root.Close()
	var out strings.Builder
	for _, fc := range st.Files {
		paths := []string{fc.Path}
		if fc.Action == "rename" && fc.From != "" {
			paths = []string{fc.From, fc.Path}
		}
		for _, p := range paths {
			before, had := "", false
			if s, ok := st.Snapshot[p]; ok && s != nil {
				before, had = *s, true
			}
			after, has := readRootFile(root, p)
			if len(before) > maxDiffFileBytes || len(after) > maxDiffFileBytes {
				fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n(file over %d bytes: not diffed)\n", p, p, maxDiffFileBytes)
				continue
			}
			aName, bName := "a/"+p, "b/"+p
			if !had {
				aName = "/dev/null"
			}
			if !has {
				bName = "/dev/null"
			}
			out.WriteString(textdiff.Unified(aName, bName, before, after))
		}
	}
	return out.String()
}

func readRootFile(root *os.Root, p string) (string, bool) {
	f, err := root.Open(filepath.FromSlash(p))
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDiffFileBytes+1))
	if err != nil {
		return "", false
	}
	return string(b), true
}
