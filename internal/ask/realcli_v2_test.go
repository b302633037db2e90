package ask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/fakellm"
)

// realFriend is one real CLI wired to its own fake LLM, ready to run relay.
type realFriend struct {
	c     realCLI
	srv   *fakellm.Server
	env   []string
	repo  string
	relay string
}

func newRealFriend(t *testing.T, c realCLI, answer string) *realFriend {
	t.Helper()
	bin := testsupport.FriendCLIs(t)
	if _, err := os.Stat(filepath.Join(bin, c.name)); err != nil {
		t.Fatalf("%s not installed in %s: run scripts/install-friend-clis.sh", c.name, bin)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not on PATH: the friend CLIs need it")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git not on PATH")
	}
	f := &realFriend{c: c, srv: fakellm.New(t, answer), repo: gitRepo(t), relay: testsupport.BuildRelay(t)}
	home := t.TempDir()
	f.env = []string{
		"PATH=" + strings.Join([]string{bin, filepath.Dir(node), filepath.Dir(git), "/usr/bin", "/bin"}, ":"),
		"HOME=" + home, "RELAY_HOME=" + filepath.Join(home, ".relay"), "TMPDIR=" + t.TempDir(),
		"NO_COLOR=1", "CI=1", "LANG=C.UTF-8",
	}
	f.env = append(f.env, c.setup(t, home, f.srv.URL)...)
	return f
}

// run runs relay ask with the friend; stdout is returned as it was printed.
func (f *realFriend) run(t *testing.T, extra ...string) string {
	t.Helper()
	args := []string{"ask", "--to", f.c.name, "--repo", f.repo, "--timeout", "120"}
	if f.c.model != "" {
		args = append(args, "--model", f.c.model)
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
	if os.Getenv("RELAY_REAL_CLIS") != "1" {
		t.Skip("set RELAY_REAL_CLIS=1 (after scripts/install-friend-clis.sh) to run the real friend CLIs")
	}
	for _, c := range realCLIs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			answer := `{"ok":true,"friend":"` + c.name + `"}`
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
			t.Logf("%s events: %v", c.name, kinds)

			schema := `{"type":"object","required":["ok","friend"],"properties":{"ok":{"type":"boolean"},"friend":{"type":"string"}}}`
			out = f.run(t, "--prompt", "SCHEMA-MARKER question", "--schema", schema, "--json")
			var doc struct {
				JSON    map[string]any `json:"json"`
				Retried bool           `json:"retried"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			if doc.JSON["ok"] != true || doc.JSON["friend"] != c.name {
				t.Errorf("json = %v", doc.JSON)
			}
			if !f.srv.SawText("Respond with JSON only") {
				t.Errorf("the schema instruction never reached the model")
			}
			t.Logf("%s schema answer %v (retried %v)", c.name, doc.JSON, doc.Retried)
		})
	}
}
