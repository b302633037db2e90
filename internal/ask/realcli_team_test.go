package ask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/testsupport"
	"github.com/relaydev/relay/internal/testsupport/fakellm"
	"github.com/relaydev/relay/internal/testsupport/realcli"
)

// teamBody is a line of every answer that only its artifact holds: a later round's
// prompt has the first line as a preview, never this.
const teamBody = "TEAM-BODY-ONLY-IN-THE-ARTIFACT"

// TestRealCLIsTeamPassesRefs: relay ask --team with the real codex and claude for two
// rounds against the fake LLM, through a real daemon and thread. Every request of round 2
// carries round 1's artifact refs (one per friend) and none of round 1's answer text.
func TestRealCLIsTeamPassesRefs(t *testing.T) {
	realcli.Skip(t)
	relay := testsupport.BuildRelay(t)
	home := t.TempDir()
	repo := gitRepo(t)
	env := realcli.Env(t, home, "codex", "claude")
	// a fake LLM for each friend, so their answers (and refs) differ
	srvs := map[string]*fakellm.Server{}
	for _, name := range []string{"codex", "claude"} {
		srvs[name] = fakellm.New(t, "TEAM-ANSWER from "+name+": use a mutex.\n\n"+teamBody+" "+name+" with the reasons at length.")
		env = append(env, realcli.Get(t, name).Setup(t, home, srvs[name].URL)...)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, relay, args...)
		cmd.Env, cmd.Dir = env, repo
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			for name, srv := range srvs {
				for _, r := range srv.Requests() {
					t.Logf("%s's server saw %s %s model=%q", name, r.Method, r.Path, r.Model)
				}
			}
			t.Fatalf("relay %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	run("up", "--port", strconv.Itoa(freePort(t)))
	t.Cleanup(func() {
		cmd := exec.Command(relay, "down")
		cmd.Env = env
		_ = cmd.Run()
	})
	thread := strings.TrimSpace(run("thread", "new", "--name", "team"))

	out := run("ask", "--team", "codex,claude", "--rounds", "2", "--prompt", "TEAM-QUESTION: which lock?",
		"--repo", repo, "--thread", thread, "--timeout", "120", "--json")
	var team struct {
		Rounds [][]struct {
			Backend string `json:"backend"`
			Answer  string `json:"answer"`
			Ref     string `json:"ref"`
		} `json:"rounds"`
		SynthesisRef string `json:"synthesis_ref"`
	}
	if err := json.Unmarshal([]byte(out), &team); err != nil {
		t.Fatalf("--team --json: %v\n%s", err, out)
	}
	if len(team.Rounds) != 2 || len(team.Rounds[0]) != 2 || team.SynthesisRef == "" {
		t.Fatalf("want 2 rounds of 2 answers and a synthesis:\n%s", out)
	}
	var refs []string
	for _, a := range team.Rounds[0] {
		if a.Ref == "" || !strings.Contains(a.Answer, teamBody+" "+a.Backend) {
			t.Fatalf("round 1's %s answer was not stored whole: %+v", a.Backend, a)
		}
		refs = append(refs, a.Ref)
	}
	if refs[0] == refs[1] {
		t.Fatalf("the two friends' answers share ref %s", refs[0])
	}

	for name, srv := range srvs {
		round2 := 0
		for _, r := range srv.Requests() {
			if !strings.Contains(r.Text, "This is round 2 of a team ask") {
				continue
			}
			round2++
			for _, ref := range refs {
				if !strings.Contains(r.Text, ref) {
					t.Errorf("%s's round-2 request lacks round 1's ref %s", name, ref)
				}
			}
			if strings.Contains(r.Text, teamBody) {
				t.Errorf("%s's round-2 request carries round 1's answer text", name)
			}
		}
		if round2 == 0 {
			t.Errorf("%s was never asked round 2", name)
		}
		t.Logf("%s: %d round-2 request(s) with refs %v, none with the answer text", name, round2, refs)
	}
}

// freePort is a loopback port free right now, so the test's daemon leaves 7474 alone.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
