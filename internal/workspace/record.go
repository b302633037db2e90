package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/apply/txn"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/textdiff"
)

// txnAuthor is the created_by of the diffs a transaction stores.
const txnAuthor = "relay apply"

// maxDiffFileBytes: a file larger than this is summarised in the stored diff, not diffed.
const maxDiffFileBytes = 1 << 20

// recordTxn stores a committed transaction's diff as an artifact and appends its event.
// Memory is a record, never a condition: when no thread is set nothing happens, and when
// the daemon cannot be reached the transaction still succeeds with one warning line.
func (w *Workspace) recordTxn(ctx context.Context, typ string, res *txn.Result) {
	c, thread := w.recorder(ctx)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st := res.State
	data := txnEventData(st)
	if d := txnDiff(st, res.Contents); d != "" {
		a, err := c.PutArtifact(ctx, thread, client.PutArtifactParams{
			Name: "txn-" + shortID(st.UUID) + ".diff", Type: "text", CreatedBy: txnAuthor, Content: strings.NewReader(d)})
		if err != nil {
			w.warnUnrecorded(thread, err)
			return
		}
		data["diff_ref"] = a.Ref
	}
	if _, err := c.AppendEvent(ctx, thread, typ, data); err != nil {
		w.warnUnrecorded(thread, err)
	}
}

// RecordEvent appends an event with no diff to the thread (a rollback, a git commit),
// best effort like every record.
func (w *Workspace) RecordEvent(ctx context.Context, typ string, data map[string]any) {
	c, thread := w.recorder(ctx)
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.AppendEvent(ctx, thread, typ, data); err != nil {
		w.warnUnrecorded(thread, err)
	}
}

// recordFailure logs a transaction that was rolled back.
func (w *Workspace) recordFailure(ctx context.Context, err error) {
	var fail *txn.Failure
	if !errors.As(err, &fail) {
		return
	}
	w.RecordEvent(ctx, EventTxnRolledBack, map[string]any{"uuid": fail.UUID, "step": fail.Step,
		"error": ClipRunes(FirstLine(fail.Err.Error()), 280), "restored": nonNilStrings(fail.Restored)})
}

// txnEventData is the event data of a transaction: what it was and which files it changed.
func txnEventData(st *txn.State) map[string]any {
	added, removed := Stat(st)
	d := map[string]any{"uuid": st.UUID, "files": NonNilFiles(st.Files), "added": added, "removed": removed}
	if st.PromptSummary != "" {
		d["summary"] = ClipRunes(st.PromptSummary, 280)
	}
	if st.GitCommitMsg != "" {
		d["git_commit_msg"] = ClipRunes(st.GitCommitMsg, 280)
	}
	if st.RevertOf != "" {
		d["revert_of"] = st.RevertOf
	}
	return d
}

// txnDiff is the unified diff of a committed transaction: each touched file from its
// snapshot to the content the engine committed (after, keyed like the snapshot).
func txnDiff(st *txn.State, after map[string]*string) string {
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
			now, has := "", false
			if s := after[p]; s != nil {
				now, has = *s, true
			}
			if len(before) > maxDiffFileBytes || len(now) > maxDiffFileBytes {
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
			out.WriteString(textdiff.Unified(aName, bName, before, now))
		}
	}
	return out.String()
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

// ClipRunes cuts s to n runes, ending a cut string with "…".
func ClipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
