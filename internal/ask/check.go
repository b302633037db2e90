package ask

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/ask/backend"
	"github.com/relaydev/relay/internal/run"
)

// BackendStatus is one line of `relay backends` (installed or not,
// plus where the friend is and which version).
type BackendStatus struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"` // "cli" or "http"
	Found       bool     `json:"found"`
	Path        string   `json:"path,omitempty"`
	URL         string   `json:"url,omitempty"`
	Version     string   `json:"version,omitempty"`
	InstallHint string   `json:"install_hint"`
	Sandboxes   []string `json:"sandboxes"`
	Sessions    bool     `json:"sessions"`
	Error       string   `json:"error,omitempty"`
	// Login is whether the friend is logged in, as far as relay can tell
	// without spending a request (nil for HTTP backends and missing CLIs).
	Login *backend.Login `json:"login,omitempty"`
}

// versionTimeout bounds `<cli> --version`; node CLIs take about a second.
const versionTimeout = 15 * time.Second

// CheckBackends probes every backend in parallel: executables on PATH (from
// env) and their --version, and the Ollama server at OLLAMA_HOST.
func CheckBackends(ctx context.Context, env []string) []BackendStatus {
	names := backend.Names()
	out := make([]BackendStatus, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = checkOne(ctx, n, env)
		}()
	}
	wg.Wait()
	return out
}

func checkOne(ctx context.Context, name string, env []string) (st BackendStatus) {
	b, _ := backend.Get(name)
	st = BackendStatus{Name: name, InstallHint: b.InstallHint(), Sandboxes: b.Sandboxes(), Sessions: b.SupportsSessions()}
	if b.Executable() == "" {
		st.Kind = "http"
		st.URL = backend.OllamaHost(env)
		v, err := backend.ProbeOllama(ctx, &http.Client{}, st.URL)
		if err != nil {
			st.Error = err.Error()
			return st
		}
		st.Found, st.Version = true, v
		return st
	}
	st.Kind = "cli"
	path, err := lookPathIn(b.Executable(), env)
	if err != nil {
		return st
	}
	st.Found, st.Path = true, path
	loginDone := make(chan backend.Login, 1)
	go func() { loginDone <- backend.CheckLogin(ctx, name, path, env) }()
	defer func() { l := <-loginDone; st.Login = &l }()
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	c := run.Command(vctx, path, "--version")
	c.Env = env
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		st.Error = "--version failed: " + err.Error()
		return st
	}
	v := strings.TrimSpace(stdout.String())
	if v == "" {
		v = strings.TrimSpace(stderr.String())
	}
	if i := strings.IndexByte(v, '\n'); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	st.Version = v
	return st
}

// lookPathIn resolves name against the PATH in env (the one the child gets).
func lookPathIn(name string, env []string) (string, error) {
	if p, ok := lookupEnv(env, "PATH"); ok {
		for _, dir := range strings.Split(p, ":") {
			if dir == "" {
				dir = "."
			}
			if path, err := exec.LookPath(dir + "/" + name); err == nil {
				return path, nil
			}
		}
		return "", exec.ErrNotFound
	}
	return exec.LookPath(name)
}
