// Package hosts registers `relay mcp` in the configuration of each agent
// host (Claude Code, Codex, Gemini CLI, Qwen Code) the way that host documents
// it, and removes it again, changing nothing else in those files.
package hosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ServerName is the name relay is registered under in every host.
const ServerName = "relay"

// Names are the hosts relay installs into, in `all` order.
var Names = []string{"claude", "codex", "gemini", "qwen"}

// Scope is where a registration lives.
type Scope string

// Scopes.
const (
	User    Scope = "user"
	Project Scope = "project"
)

// Env is what locating host files needs.
type Env struct {
	Home       string
	ProjectDir string
	Getenv     func(string) string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Server is the command a host runs, and which of its tools the host may run without asking.
type Server struct {
	Command string
	Args    []string
	Env     map[string]string
	// ReadTools change nothing: each host is told to run them without asking, per tool
	// where it can (Claude Code permissions, Codex approval_mode, a Gemini CLI policy).
	ReadTools []string
	// WriteTools are left to the host's own approval unless AllowWrites.
	WriteTools  []string
	AllowWrites bool
}

// Change is one file to write (New nil: remove the file).
type Change struct {
	Path string
	Old  []byte // nil: the file does not exist
	New  []byte
	Note string // what the change is, for the user
	// Skip is a file relay leaves alone (a user's own slash command of the same name).
	Skip bool
	// Root is the project directory for a project-scope file: no component of
	// Path below it may be a symbolic link (the project may be a clone).
	Root string
}

// ConfigPath is the file holding relay's registration for host and scope.
func ConfigPath(host string, scope Scope, env Env) (string, error) {
	if scope == Project && env.ProjectDir == "" {
		return "", errors.New("no project directory")
	}
	switch host {
	case "claude":
		if scope == Project {
			return filepath.Join(env.ProjectDir, ".mcp.json"), nil
		}
		if d := env.getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, ".claude.json"), nil
		}
		return filepath.Join(env.Home, ".claude.json"), nil
	case "codex":
		if scope == Project {
			return filepath.Join(env.ProjectDir, ".codex", "config.toml"), nil
		}
		if d := env.getenv("CODEX_HOME"); d != "" {
			return filepath.Join(d, "config.toml"), nil
		}
		return filepath.Join(env.Home, ".codex", "config.toml"), nil
	case "gemini", "qwen":
		base := env.Home
		if scope == Project {
			base = env.ProjectDir
		}
		return filepath.Join(base, "."+host, "settings.json"), nil
	}
	return "", fmt.Errorf("unknown host %q (one of: %s, all)", host, strings.Join(Names, ", "))
}

// commandsDir is where Claude Code looks for slash commands.
func commandsDir(scope Scope, env Env) string {
	if scope == Project {
		return filepath.Join(env.ProjectDir, ".claude", "commands")
	}
	if d := env.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "commands")
	}
	return filepath.Join(env.Home, ".claude", "commands")
}

// jsonEntry is relay's mcpServers entry for a JSON host.
func jsonEntry(host string, srv Server) orderedObject {
	e := orderedObject{}
	if host == "claude" {
		e = append(e, kv{"type", "stdio"})
	}
	args := srv.Args
	if args == nil {
		args = []string{}
	}
	e = append(e, kv{"command", srv.Command}, kv{"args", args})
	if len(srv.Env) > 0 {
		env := orderedObject{}
		for _, k := range sortedKeys(srv.Env) {
			env = append(env, kv{k, srv.Env[k]})
		}
		e = append(e, kv{"env", env})
	}
	if (host == "gemini" || host == "qwen") && srv.AllowWrites {
		// trust is per server: every tool runs without asking
		e = append(e, kv{"trust", true})
	}
	return e
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// codexBlock is relay's [mcp_servers.relay] table.
func codexBlock(srv Server) string {
	var b strings.Builder
	b.WriteString("[mcp_servers." + ServerName + "]\n")
	b.WriteString("command = " + tomlString(srv.Command) + "\n")
	args := make([]string, len(srv.Args))
	for i, a := range srv.Args {
		args[i] = tomlString(a)
	}
	b.WriteString("args = [" + strings.Join(args, ", ") + "]\n")
	if srv.AllowWrites {
		// codex exec never asks: this lets every relay tool run
		b.WriteString("default_tools_approval_mode = \"approve\"\n")
	}
	// a friend's answer can take minutes; codex's default tool timeout is shorter
	b.WriteString("tool_timeout_sec = 900\n")
	if len(srv.Env) > 0 {
		b.WriteString("\n[mcp_servers." + ServerName + ".env]\n")
		for _, k := range sortedKeys(srv.Env) {
			b.WriteString(tomlKey(k) + " = " + tomlString(srv.Env[k]) + "\n")
		}
	}
	// per tool: reads run without asking (codex also honours their readOnlyHint); writes are
	// left to codex's approval, which refuses them in codex exec, unless --allow-writes
	for _, t := range srv.ReadTools {
		b.WriteString("\n[mcp_servers." + ServerName + ".tools." + tomlKey(t) + "]\napproval_mode = \"approve\"\n")
	}
	return b.String()
}

// claudeSettingsPath is Claude Code's user settings file (permissions live there).
func claudeSettingsPath(scope Scope, env Env) string {
	if scope == Project {
		return filepath.Join(env.ProjectDir, ".claude", "settings.json")
	}
	if d := env.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "settings.json")
	}
	return filepath.Join(env.Home, ".claude", "settings.json")
}

// claudeTool is the name Claude Code gives relay's tool in permissions.
func claudeTool(t string) string { return "mcp__" + ServerName + "__" + t }

// claudePermissions adds relay's tools to permissions.allow (want) and takes away the
// relay entries not wanted, leaving everything else in the file as it was.
func claudePermissions(old []byte, want []string) ([]byte, error) {
	var allow []string
	if raw, ok, err := GetJSON(old, "permissions", "allow"); err != nil {
		return nil, err
	} else if ok {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return nil, fmt.Errorf("permissions.allow is not a list of strings: %w", err)
		}
	}
	var next []string
	for _, a := range allow {
		if !strings.HasPrefix(a, "mcp__"+ServerName+"__") || slices.Contains(want, a) {
			next = append(next, a)
		}
	}
	for _, w := range want {
		if !slices.Contains(next, w) {
			next = append(next, w)
		}
	}
	if slices.Equal(allow, next) {
		return old, nil
	}
	if len(next) == 0 {
		out, _, err := DeleteJSON(old, true, "permissions", "allow")
		return out, err
	}
	return SetJSON(old, next, "permissions", "allow")
}

// geminiPolicyPath is relay's own policy file for Gemini CLI (allow the read tools).
func geminiPolicyPath(scope Scope, env Env) string {
	base := env.Home
	if scope == Project {
		base = env.ProjectDir
	}
	return filepath.Join(base, ".gemini", "policies", "relay.toml")
}

// geminiPolicy lets Gemini CLI run relay's read tools without asking: headless runs
// otherwise leave any tool that needs approval out of the model's request.
func geminiPolicy(tools []string) []byte {
	var b strings.Builder
	b.WriteString("# " + commandMarker + "\n# relay's read-only tools run without asking; the others follow your approval mode.\n")
	for _, t := range tools {
		b.WriteString("\n[[rule]]\ntoolName = " + tomlString("mcp_"+ServerName+"_"+t) + "\ndecision = \"allow\"\npriority = 100\n")
	}
	return []byte(b.String())
}

func tomlKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return tomlString(k)
		}
	}
	return k
}

// Install returns the changes that register srv in host; an already current
// registration gives no change.
func Install(host string, scope Scope, env Env, srv Server) ([]Change, error) {
	path, err := ConfigPath(host, scope, env)
	if err != nil {
		return nil, err
	}
	root := scopeRoot(scope, env)
	old, err := readFile(path, root)
	if err != nil {
		return nil, err
	}
	var next []byte
	if host == "codex" {
		next, err = SetTOMLTable(old, "mcp_servers."+ServerName, codexBlock(srv))
	} else {
		next, err = setJSONEntry(old, jsonEntry(host, srv))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var changes []Change
	if !bytes.Equal(old, next) || old == nil {
		changes = append(changes, Change{Path: path, Old: old, New: next, Note: "register relay mcp", Root: root})
	}
	switch host {
	case "claude":
		want := make([]string, 0, len(srv.ReadTools)+len(srv.WriteTools))
		for _, t := range srv.ReadTools {
			want = append(want, claudeTool(t))
		}
		if srv.AllowWrites {
			for _, t := range srv.WriteTools {
				want = append(want, claudeTool(t))
			}
		}
		sp := claudeSettingsPath(scope, env)
		cur, err := readFile(sp, root)
		if err != nil {
			return nil, err
		}
		nextSettings, err := claudePermissions(cur, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		if !bytes.Equal(cur, nextSettings) || (cur == nil && len(want) > 0) {
			changes = append(changes, Change{Path: sp, Old: cur, New: nextSettings, Note: "allow " + strings.Join(want, ", "), Root: root})
		}
	case "gemini":
		pp := geminiPolicyPath(scope, env)
		cur, err := readFile(pp, root)
		if err != nil {
			return nil, err
		}
		if cur != nil && !bytes.Contains(cur, []byte(commandMarker)) {
			changes = append(changes, Change{Path: pp, Old: cur, New: cur, Skip: true, Note: "kept your own policies/relay.toml (not written by relay); allow mcp_relay_read there"})
		} else if want := geminiPolicy(srv.ReadTools); !bytes.Equal(cur, want) {
			changes = append(changes, Change{Path: pp, Old: cur, New: want, Note: "policy: run relay's read-only tools without asking", Root: root})
		}
	}
	if host == "claude" {
		for _, c := range slashCommands {
			p := filepath.Join(commandsDir(scope, env), c.file)
			cur, err := readFile(p, root)
			if err != nil {
				return nil, err
			}
			if cur != nil && !bytes.Contains(cur, []byte(commandMarker)) {
				changes = append(changes, Change{Path: p, Old: cur, New: cur, Skip: true, Note: "kept your own /" + strings.TrimSuffix(c.file, ".md") + " (not written by relay)"})
				continue
			}
			if !bytes.Equal(cur, []byte(c.text)) {
				changes = append(changes, Change{Path: p, Old: cur, New: []byte(c.text), Note: "slash command /" + strings.TrimSuffix(c.file, ".md"), Root: root})
			}
		}
	}
	return changes, nil
}

func setJSONEntry(old []byte, entry orderedObject) ([]byte, error) {
	want, _ := json.Marshal(entry)
	if cur, ok, err := GetJSON(old, "mcpServers", ServerName); err != nil {
		return nil, err
	} else if ok && jsonEqual(cur, want) {
		return old, nil
	}
	next, err := SetJSON(old, entry, "mcpServers", ServerName)
	if err != nil {
		return nil, err
	}
	if got, ok, err := GetJSON(next, "mcpServers", ServerName); err != nil || !ok || !jsonEqual(got, want) {
		return nil, fmt.Errorf("the edit did not produce relay's entry (%v); fix the file by hand", err)
	}
	return next, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// Uninstall returns the changes that remove relay from host.
func Uninstall(host string, scope Scope, env Env) ([]Change, error) {
	path, err := ConfigPath(host, scope, env)
	if err != nil {
		return nil, err
	}
	root := scopeRoot(scope, env)
	old, err := readFile(path, root)
	if err != nil {
		return nil, err
	}
	var changes []Change
	if old != nil {
		var next []byte
		var found bool
		if host == "codex" {
			next, found, err = DeleteTOMLTable(old, "mcp_servers."+ServerName)
		} else {
			next, found, err = DeleteJSON(old, true, "mcpServers", ServerName)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if found {
			if host != "codex" && emptyConfig(next) {
				next = nil // nothing but relay was in it: relay made the file, so it goes
			}
			changes = append(changes, Change{Path: path, Old: old, New: next, Note: "unregister relay mcp", Root: root})
		}
	}
	switch host {
	case "claude":
		sp := claudeSettingsPath(scope, env)
		cur, err := readFile(sp, root)
		if err != nil {
			return nil, err
		}
		if cur != nil {
			next, err := claudePermissions(cur, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sp, err)
			}
			if !bytes.Equal(cur, next) {
				if emptySettings(next) {
					next = nil // nothing but relay's permissions was in it: relay made the file, so it goes
				}
				changes = append(changes, Change{Path: sp, Old: cur, New: next, Note: "remove relay's tools from permissions.allow", Root: root})
			}
		}
	case "gemini":
		pp := geminiPolicyPath(scope, env)
		cur, err := readFile(pp, root)
		if err != nil {
			return nil, err
		}
		if cur != nil && bytes.Contains(cur, []byte(commandMarker)) {
			changes = append(changes, Change{Path: pp, Old: cur, New: nil, Note: "remove relay's policy", Root: root})
		}
	}
	if host == "claude" {
		for _, c := range slashCommands {
			p := filepath.Join(commandsDir(scope, env), c.file)
			cur, err := readFile(p, root)
			if err != nil {
				return nil, err
			}
			if cur != nil && bytes.Contains(cur, []byte(commandMarker)) {
				changes = append(changes, Change{Path: p, Old: cur, New: nil, Note: "remove slash command /" + strings.TrimSuffix(c.file, ".md"), Root: root})
			}
		}
	}
	return changes, nil
}

// emptySettings reports whether Claude Code settings hold nothing (or only an empty permissions).
func emptySettings(b []byte) bool {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	if p, ok := v["permissions"].(map[string]any); ok && len(p) == 0 {
		delete(v, "permissions")
	}
	return len(v) == 0
}

// emptyConfig reports whether a JSON config holds nothing (or only an empty mcpServers).
func emptyConfig(b []byte) bool {
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	if m, ok := v["mcpServers"].(map[string]any); ok && len(m) == 0 {
		delete(v, "mcpServers")
	}
	return len(v) == 0
}

// Registration is what a host's config says about relay.
type Registration struct {
	Host       string `json:"host"`
	Scope      Scope  `json:"scope"`
	Path       string `json:"path"`
	Registered bool   `json:"registered"`
	Command    string `json:"command,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Status reads each scope's config of host.
func Status(host string, env Env) []Registration {
	var out []Registration
	for _, scope := range []Scope{User, Project} {
		path, err := ConfigPath(host, scope, env)
		if err != nil {
			continue
		}
		r := Registration{Host: host, Scope: scope, Path: path}
		b, err := readFile(path, scopeRoot(scope, env))
		if err != nil {
			r.Error = err.Error()
			out = append(out, r)
			continue
		}
		if b == nil {
			out = append(out, r)
			continue
		}
		if host == "codex" {
			v, err := decodeTOML(b)
			if err != nil {
				r.Error = "not valid TOML: " + err.Error()
			} else if t, ok := tomlTable(v, "mcp_servers", ServerName); ok {
				r.Registered = true
				r.Command, _ = t["command"].(string)
			}
		} else {
			raw, ok, err := GetJSON(b, "mcpServers", ServerName)
			if err != nil {
				r.Error = err.Error()
			} else if ok {
				r.Registered = true
				var e struct {
					Command string `json:"command"`
				}
				_ = json.Unmarshal(raw, &e)
				r.Command = e.Command
			}
		}
		out = append(out, r)
	}
	return out
}
