package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
)

// An agent's work reaches memory as a person's does: an edit_files call (answer, edit, revert) and
// an ask through relay mcp leave the same events, with the same fields, and the same
// artifacts in the project's thread as relay apply, relay revert and relay ask. Both are
// driven for real (relay mcp over stdio, the relay binary) and read back through the
// daemon's HTTP API.
func TestStdioRecordsInTheThreadLikeTheCLI(t *testing.T) {
	w := newWorld(t)
	cs := w.connect(t, nil)
	id := projectID(t, w)
	answer := func(uuid, file string) string {
		return "```go // " + file + "\npackage main\n```\n\n```yaml\nprojectId: \"" + id + "\"\nuuid: " + uuid + "\ngitCommitMsg: add " + file + "\npromptSummary: add " + file + "\n```\n"
	}

	// the agent: answer, edit, revert, ask
	mustOK(t, cs, "edit_files", map[string]any{"op": "answer", "answer": answer("8e1c1f4e-9b0a-4c55-9f43-4a1b2c3d4e01", "agent.go")})
	ed := mustOK(t, cs, "edit_files", map[string]any{"op": "edit", "path": "main.go", "old_string": `println("hello")`, "new_string": `println("agent")`})
	mustOK(t, cs, "edit_files", map[string]any{"op": "revert", "ref": ed["uuid"]})
	if text, isErr := call(t, cs, "ask", map[string]any{"prompt": "agent question", "to": []string{"codex"}}); isErr || !strings.Contains(text, `"ref":"`) {
		t.Fatalf("ask: %v %s", isErr, text)
	}
	thread := strings.TrimSpace(readFile(t, w, ".relaycode/thread"))
	c := apiClient(t, w)
	agent := threadRecord(t, c, thread, 0)

	// the person, in the same project and so the same thread
	w.write(t, "person.md", answer("8e1c1f4e-9b0a-4c55-9f43-4a1b2c3d4e02", "person.go"))
	w.run(t, w.relay, "apply", "person.md", "-y")
	w.run(t, w.relay, "revert", "-y")
	w.env = append(w.env, "FAKE_ANSWER=PERSON-ANSWER") // the same answer would be deduplicated into the agent's artifact
	w.run(t, w.relay, "ask", "--to", "codex", "--prompt", "person question")
	person := threadRecord(t, c, thread, agent.last)

	for _, typ := range []string{"txn.applied", "txn.reverted", "ask.answered"} {
		a, p := agent.fields[typ], person.fields[typ]
		if a == "" || a != p {
			t.Errorf("%s: the agent's event has fields %q, the person's %q", typ, a, p)
		}
	}
	if agent.fields["txn.applied#count"] != "2" { // the answer and the edit
		t.Errorf("agent applied %s transactions, want 2", agent.fields["txn.applied#count"])
	}
	for _, r := range []*record{agent, person} {
		if got := strings.Join(r.artifacts, " "); got != "ask-codex.md/markdown/relay ask txn.diff/text/relay apply" {
			t.Errorf("artifacts (name/type/created_by, once each) = %s", got)
		}
	}
	// each diff artifact holds the transaction's unified diff, made from the engine's contents
	var ev struct {
		UUID    string `json:"uuid"`
		DiffRef string `json:"diff_ref"`
	}
	if err := json.Unmarshal(agent.events["txn.reverted"].Data, &ev); err != nil || ev.DiffRef == "" {
		t.Fatalf("txn.reverted %s: %v", agent.events["txn.reverted"].Data, err)
	}
	rc, err := c.ArtifactRaw(context.Background(), thread, ev.DiffRef)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	diff, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if d := string(diff); !strings.Contains(d, "--- a/main.go\n+++ b/main.go\n") || !strings.Contains(d, "-\tprintln(\"agent\")\n+\tprintln(\"hello\")\n") {
		t.Errorf("revert diff:\n%s", d)
	}
}

// record is what a stretch of a thread's log holds: per event type the sorted field names
// of its data (and how many there were), the last event of each type, and the artifacts
// (name/type/created_by, diff names folded) each once.
type record struct {
	fields    map[string]string
	events    map[string]memory.Event
	artifacts []string
	last      int64
}

func threadRecord(t *testing.T, c *client.Client, thread string, after int64) *record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := c.Events(ctx, thread, after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	r := &record{fields: map[string]string{}, events: map[string]memory.Event{}, last: after}
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, e := range evs {
		r.last = e.ID
		if !strings.HasPrefix(e.Type, "txn.") && !strings.HasPrefix(e.Type, "ask.") {
			if e.Type == "artifact.stored" {
				var a struct{ Ref string }
				if json.Unmarshal(e.Data, &a) == nil {
					art, err := c.GetArtifact(ctx, thread, a.Ref)
					if err != nil {
						t.Fatal(err)
					}
					name := art.Name
					if strings.HasPrefix(name, "txn-") && strings.HasSuffix(name, ".diff") {
						name = "txn.diff"
					}
					k := name + "/" + art.Type + "/" + art.Provenance.CreatedBy
					if !seen[k] {
						seen[k] = true
						r.artifacts = append(r.artifacts, k)
					}
				}
			}
			continue
		}
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("%s data %s: %v", e.Type, e.Data, err)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.fields[e.Type] = strings.Join(keys, ",")
		r.events[e.Type] = e
		counts[e.Type]++
	}
	for typ, n := range counts {
		r.fields[typ+"#count"] = strconv.Itoa(n)
	}
	sort.Strings(r.artifacts)
	return r
}

// apiClient is a client of the world's daemon, as any program reading memory has one.
func apiClient(t *testing.T, w *world) *client.Client {
	t.Helper()
	env := map[string]string{}
	for _, kv := range w.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	c, err := client.FromHome(filepath.Join(w.home, ".relay"), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}
