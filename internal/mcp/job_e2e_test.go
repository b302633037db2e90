package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdioAskBackground: over real relay mcp stdio, ask with background returns a job at
// once, read op=job waits for it and returns the friend's answer with its artifact ref,
// and the job's life is events in the thread. An agent's limits hold for a job too.
func TestStdioAskBackground(t *testing.T) {
	w := newWorld(t)
	cs := w.connect(t, nil)

	st := mustOK(t, cs, "ask", map[string]any{"prompt": "Review in the background", "to": []string{"codex"}, "background": true})
	id, _ := st["job"].(string)
	if len(id) != 12 || st["status"] != "running" || !strings.Contains(mustJSON(st), `"next":"read {\"op\":\"job\",\"id\":\"`+id) {
		t.Fatalf("ask background: %s", mustJSON(st))
	}
	thread, _ := st["thread"].(string)
	if b, err := os.ReadFile(filepath.Join(w.project, ".relaycode", "thread")); err != nil || thread != strings.TrimSpace(string(b)) {
		t.Fatalf("the job's thread %q is not the project's (%q, %v)", thread, b, err)
	}

	res := mustOK(t, cs, "read", map[string]any{"op": "job", "id": id, "wait": 30})
	if res["status"] != "done" {
		t.Fatalf("read op=job: %s", mustJSON(res))
	}
	answers, _ := res["answers"].([]any)
	if len(answers) != 1 {
		t.Fatalf("read op=job answers: %s", mustJSON(res))
	}
	a, _ := answers[0].(map[string]any)
	ref, _ := a["ref"].(string)
	if a["backend"] != "codex" || !strings.Contains(a["answer"].(string), "FRIEND-SAYS-LGTM") || ref == "" {
		t.Fatalf("the job's answer: %s", mustJSON(a))
	}
	if g := mustOK(t, cs, "read", map[string]any{"op": "get", "ref": ref}); !strings.Contains(mustJSON(g), "FRIEND-SAYS-LGTM") {
		t.Fatalf("the answer's artifact: %s", mustJSON(g))
	}
	ev := mustJSON(mustOK(t, cs, "read", map[string]any{"op": "events", "after": 0}))
	started := strings.Index(ev, `"type":"ask.job.started"`)
	answered := strings.Index(ev, `"type":"ask.answered"`)
	finished := strings.Index(ev, `"type":"ask.job.finished"`)
	if started < 0 || answered < started || finished < answered || !strings.Contains(ev, `"job":"`+id+`"`) {
		t.Fatalf("the job's life in the thread's events: %s", ev)
	}

	// an agent's limits: nothing outside the project, not even in the background
	secret := filepath.Join(w.home, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, "ask", map[string]any{"prompt": "x", "to": []string{"codex"}, "context_file": secret, "background": true}); !isErr || !strings.Contains(text, "outside the project") {
		t.Fatalf("a background ask with a context file outside the project: %v %s", isErr, text)
	}
	if text, isErr := call(t, cs, "read", map[string]any{"op": "job", "id": "000000000000"}); !isErr || !strings.Contains(text, "no job 000000000000") {
		t.Fatalf("read op=job of no job: %v %s", isErr, text)
	}
	if text, isErr := call(t, cs, "read", map[string]any{"op": "job", "id": id, "wait": 600}); !isErr {
		t.Fatalf("read op=job with a wait over the bound: %s", text)
	}
}
