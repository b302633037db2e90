package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/relaydev/relay/internal/run"
)

// Login states.
const (
	LoginOK      = "ok"      // credentials the CLI will use are there
	LoginMissing = "missing" // the CLI will refuse: not logged in
	LoginWarn    = "warn"    // credentials exist but will not work as they are
	LoginUnknown = "unknown" // the CLI offers no way to tell without a request
)

// Login is what relay can tell about a friend's credentials without
// spending a request on its model.
type Login struct {
	State  string `json:"state"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

// loginTimeout bounds a login-status command (node CLIs start in about a second).
const loginTimeout = 15 * time.Second

// CheckLogin asks the friend at path (found on PATH) whether it is logged
// in, the cheapest way its CLI allows: a status command where it has one
// (codex login status, claude auth status), else its settings and
// environment. env is the environment the friend would get.
func CheckLogin(ctx context.Context, name, path string, env []string) Login {
	home, _ := lookupEnv(env, "HOME")
	switch Canonical(name) {
	case "codex":
		return codexLogin(ctx, path, env, home)
	case "claude":
		return claudeLogin(ctx, path, env)
	case "gemini":
		return geminiLogin(env, home)
	case "qwen":
		return qwenLogin(env, home)
	case "agy":
		return Login{State: LoginUnknown, Detail: "agy has no login-status command",
			Hint: "run `agy` once in a terminal to sign in with your Google account"}
	case "opencode":
		return Login{State: LoginUnknown, Detail: "not checked (see `opencode auth list`)"}
	}
	return Login{State: LoginUnknown, Detail: "not applicable"}
}

// statusCommand runs a login-status command and returns its combined output.
func statusCommand(ctx context.Context, path string, env []string, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	var out bytes.Buffer
	c := run.Command(ctx, path, args...)
	c.Env, c.Stdout, c.Stderr = env, &out, &out
	c.KillGroupOnExit = true
	err := c.Run()
	var ee *run.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.Code, nil
	}
	return out.String(), 0, err
}

// lastLine is a command's last non-empty line (codex prints warnings first).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func codexLogin(ctx context.Context, path string, env []string, home string) Login {
	// a custom model provider with its own key needs no login
	codexHome, ok := lookupEnv(env, "CODEX_HOME")
	if !ok || codexHome == "" {
		codexHome = filepath.Join(home, ".codex")
	}
	var cfg struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			EnvKey string `toml:"env_key"`
		} `toml:"model_providers"`
	}
	if b, err := readBounded(filepath.Join(codexHome, "config.toml")); err == nil {
		_ = toml.Unmarshal(b, &cfg)
	}
	if p := cfg.ModelProvider; p != "" && p != "openai" {
		key := cfg.ModelProviders[p].EnvKey
		if key == "" {
			return Login{State: LoginUnknown, Detail: "model provider " + p + " from config.toml (no env_key to check)"}
		}
		if v, _ := lookupEnv(env, key); v != "" {
			return Login{State: LoginOK, Detail: "model provider " + p + ", key in $" + key}
		}
		return Login{State: LoginMissing, Detail: "model provider " + p + " needs $" + key + ", which is not set",
			Hint: "export " + key + " before asking codex"}
	}
	out, code, err := statusCommand(ctx, path, env, "login", "status")
	switch {
	case err != nil:
		return Login{State: LoginUnknown, Detail: "codex login status failed: " + err.Error()}
	case code == 0:
		return Login{State: LoginOK, Detail: lastLine(out)}
	}
	return Login{State: LoginMissing, Detail: "codex login status: " + lastLine(out), Hint: loginHint("codex")}
}

func claudeLogin(ctx context.Context, path string, env []string) Login {
	out, _, err := statusCommand(ctx, path, dropEnv(env, "CLAUDECODE", "CLAUDE_CODE_SESSION"), "auth", "status", "--json")
	if err != nil {
		return Login{State: LoginUnknown, Detail: "claude auth status failed: " + err.Error()}
	}
	var st struct {
		LoggedIn     *bool  `json:"loggedIn"`
		AuthMethod   string `json:"authMethod"`
		APIKeySource string `json:"apiKeySource"`
	}
	if !decodeTrailingJSON([]byte(out), &st) || st.LoggedIn == nil {
		return Login{State: LoginUnknown, Detail: "claude auth status said: " + lastLine(out)}
	}
	if !*st.LoggedIn {
		return Login{State: LoginMissing, Detail: "claude auth status: not logged in", Hint: loginHint("claude")}
	}
	d := "logged in (" + st.AuthMethod
	if st.APIKeySource != "" {
		d += ", " + st.APIKeySource
	}
	return Login{State: LoginOK, Detail: d + ")"}
}

// selectedAuth reads security.auth.selectedType from a gemini/qwen settings file.
func selectedAuth(path string) string {
	b, err := readBounded(path)
	if err != nil {
		return ""
	}
	var s struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
		SelectedAuthType string `json:"selectedAuthType"` // older layout
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	if s.Security.Auth.SelectedType != "" {
		return s.Security.Auth.SelectedType
	}
	return s.SelectedAuthType
}

func geminiLogin(env []string, home string) Login {
	has := func(k string) bool { v, _ := lookupEnv(env, k); return v != "" }
	sel := selectedAuth(filepath.Join(home, ".gemini", "settings.json"))
	switch sel {
	case "gemini-api-key":
		if has("GEMINI_API_KEY") || has("GOOGLE_API_KEY") {
			return Login{State: LoginOK, Detail: "API key (gemini-api-key)"}
		}
		return Login{State: LoginMissing, Detail: "settings select an API key, but GEMINI_API_KEY is not set", Hint: "export GEMINI_API_KEY"}
	case "vertex-ai":
		return Login{State: LoginOK, Detail: "Vertex AI (vertex-ai)"}
	case "oauth-personal", "login-with-google":
		return Login{State: LoginWarn, Detail: "a personal Google sign-in, which Gemini CLI refuses since 2026-06-18 (UNSUPPORTED_CLIENT)",
			Hint: unsupportedClientHint}
	case "":
		if has("GEMINI_API_KEY") {
			return Login{State: LoginWarn, Detail: "GEMINI_API_KEY is set but no auth method is selected (gemini exits 41)",
				Hint: "add \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}} to ~/.gemini/settings.json"}
		}
		return Login{State: LoginMissing, Detail: "no auth method selected and no GEMINI_API_KEY", Hint: loginHint("gemini")}
	}
	return Login{State: LoginUnknown, Detail: "auth method " + sel}
}

func qwenLogin(env []string, home string) Login {
	has := func(k string) bool { v, _ := lookupEnv(env, k); return v != "" }
	sel := selectedAuth(filepath.Join(home, ".qwen", "settings.json"))
	switch {
	case (sel == "openai" || sel == "") && has("OPENAI_API_KEY"):
		return Login{State: LoginOK, Detail: "OpenAI-compatible key in $OPENAI_API_KEY"}
	case sel == "qwen-oauth":
		if _, err := os.Stat(filepath.Join(home, ".qwen", "oauth_creds.json")); err == nil {
			return Login{State: LoginOK, Detail: "Qwen OAuth (qwen-oauth)"}
		}
		return Login{State: LoginMissing, Detail: "Qwen OAuth selected but no credentials stored", Hint: loginHint("qwen")}
	case sel == "openai":
		return Login{State: LoginMissing, Detail: "openai auth selected but OPENAI_API_KEY is not set", Hint: loginHint("qwen")}
	case sel == "":
		return Login{State: LoginMissing, Detail: "no auth method selected and no OPENAI_API_KEY", Hint: loginHint("qwen")}
	}
	return Login{State: LoginUnknown, Detail: "auth method " + sel}
}

// readBounded reads a small settings file; anything bigger than 1 MiB, or
// not a regular file, is not one.
func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil, fs.ErrInvalid
	}
	return os.ReadFile(path)
}

// decodeTrailingJSON parses a JSON document that may follow log lines.
func decodeTrailingJSON(stdout []byte, v any) bool {
	s := strings.TrimSpace(string(stdout))
	if s == "" {
		return false
	}
	if json.Unmarshal([]byte(s), v) == nil {
		return true
	}
	if i := strings.Index(s, "\n{"); i >= 0 {
		return json.Unmarshal([]byte(s[i+1:]), v) == nil
	}
	return false
}
