package workspace

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/ask"
)

// writeJob makes job records as StartAsk would, without starting a process.
func writeJob(t *testing.T, w *Workspace, spec jobSpec) (*ask.JobStore, string) {
	t.Helper()
	store, err := w.JobStore()
	if err != nil {
		t.Fatal(err)
	}
	j, err := store.NewJob(spec.To, spec.Prompt, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetPID(j, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(store.SpecPath(j.ID), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return store, j.ID
}

// TestRunJobKeepsAnAgentsLimits: the job process re-checks its request as the principal
// that asked, so an agent's job (or one whose principal was tampered with) cannot get a
// sandbox or a context file a tool call could not; the refusal is the job's result.
func TestRunJobKeepsAnAgentsLimits(t *testing.T) {
	for name, spec := range map[string]jobSpec{
		"agent sandbox":          {Principal: "agent", Sandbox: "danger-full-access"},
		"unknown principal":      {Principal: "root", Sandbox: "danger-full-access"},
		"agent context file":     {Principal: "agent", ContextFile: "/etc/passwd"},
		"agent context traverse": {Principal: "agent", ContextFile: "../../../../etc/passwd"},
	} {
		t.Run(name, func(t *testing.T) {
			w, _ := newWorkspace(t, Person) // the job process starts as nobody in particular
			spec.WorkDir, spec.To, spec.Prompt, spec.Timeout = w.WorkDir, []string{"codex"}, "q", 60
			store, id := writeJob(t, w, spec)
			w.Asker = &ask.Asker{} // never reached: Prepare would panic on the zero Asker
			if err := w.RunJob(context.Background(), id); err == nil {
				t.Fatal("the job ran")
			}
			out, err := w.Job(context.Background(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if out.Job.Status != "failed" || out.Err == nil || len(out.Answers) != 0 {
				t.Fatalf("job = %+v, err %+v", out.Job, out.Err)
			}
			if !strings.Contains(out.Err.Message, "sandbox") && !strings.Contains(out.Err.Message, "outside the project") {
				t.Errorf("the refusal: %+v", out.Err)
			}
			if b, _ := os.ReadFile(store.ResultPath(id)); !json.Valid(b) {
				t.Errorf("result.json is not JSON: %s", b)
			}
		})
	}
}
