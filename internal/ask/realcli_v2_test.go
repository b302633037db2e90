package ask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/fakellm"
	"github.com/relaydev/relay/internal/testsupport/realcli"
)

// realFriend is one real CLI wired to its own fake LLM, ready to run relay.
type realFriend struct {
	c     realcli.CLI
	srv   *fakellm.Server
	env   []string
	repo  string
	relay string
}

func newRealFriend(t *testing.T, c realcli.CLI, answer string) *realFriend {
	t.Helper()
	f := &realFriend{c: c, srv: fakellm.New(t, answer), repo: gitRepo(t), relay: testsupport.BuildRelay(t)}
	home := t.TempDir()
	f.env = append(realcli.Env(t, home, c.Name), c.Setup(t, home, f.srv.URL)...)
	return f
}

// run runs relay ask with the friend; stdout is returned as it was printed.
func (f *realFriend) run(t *testing.T, extra ...string) string {
	t.Helper()
	args := []string{"ask", "--to", f.c.Name, "--repo", f.repo, "--timeout", "120"}
	if f.c.Model != "" {
		args = append(args, "--model", f.c.Model)
	}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.relay, args...)
	cmd.Env, cmd.Dir = f.env, f.repo
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		for _, r := range f.srv.Requests() {
			t.Logf("server saw %s %s model=%q stream=%v", r.Method, r.Path, r.Model, r.Stream)
		}
		t.Fatalf("relay %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestRealCLIsStreamAndSchema: with each real CLI, --stream --json passes the
// friend's events on as they come (status events, then the answer's text),
// and --schema gets a JSON answer back, checked.
func TestRealCLIsStreamAndSchema(t *testing.T) {
	realcli.Skip(t)
	for _, c := range realcli.All {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			answer := `{"ok":true,"friend":"` + c.Name + `"}`
			f := newRealFriend(t, c, answer)

			out := f.run(t, "--prompt", "STREAM-MARKER question", "--stream", "--json")
			var texts strings.Builder
			var kinds []string
			var final map[string]any
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var ev map[string]any
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("--stream --json printed a line that is not JSON: %q", line)
				}
				if k, ok := ev["kind"].(string); ok {
					kinds = append(kinds, k)
					if k == "text" {
						texts.WriteString(ev["text"].(string))
					}
					continue
				}
				final = ev
			}
			if final == nil || final["answer"] != answer {
				t.Fatalf("final line %v, want answer %q", final, answer)
			}
			if !strings.Contains(texts.String(), answer) {
				t.Errorf("the streamed text %q does not carry the answer", texts.String())
			}
			if len(kinds) < 3 || kinds[0] != "status" {
				t.Errorf("events %v: want status events before the text", kinds)
			}
			t.Logf("%s events: %v", c.Name, kinds)

			schema := `{"type":"object","required":["ok","friend"],"properties":{"ok":{"type":"boolean"},"friend":{"type":"string"}}}`
			out = f.run(t, "--prompt", "SCHEMA-MARKER question", "--schema", schema, "--json")
			var doc struct {
				JSON    map[string]any `json:"json"`
				Retried bool           `json:"retried"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			if doc.JSON["ok"] != true || doc.JSON["friend"] != c.Name {
				t.Errorf("json = %v", doc.JSON)
			}
			if !f.srv.SawText("Respond with JSON only") {
				t.Errorf("the schema instruction never reached the model")
			}
			t.Logf("%s schema answer %v (retried %v)", c.Name, doc.JSON, doc.Retried)
		})
	}
}
