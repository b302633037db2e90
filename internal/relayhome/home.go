// Package relayhome owns $RELAY_HOME, the user's relay directory (default ~/.relay), and what
// lives in it:
//
//	config.json   the daemon's API token and port, fetch and hop limits (0600)
//	daemon.json   how clients find the running daemon (url, pid, version)
//	daemon.pid    the daemon's pid; daemon.lock its exclusive lock; daemon.log its log
//	relay.db      the embedded SQLite memory store; threads/ its human-readable mirror
//	ask/          relay ask's --session labels
//	record.key    seals the transaction records relay writes in projects (0600)
//
// Clients import this package, not the server, to find a daemon.
package relayhome

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// DefaultPort is where the memory daemon listens unless told otherwise.
const DefaultPort = 7474

// User is $RELAY_HOME/config.json: the daemon's API token, port and limits. The
// environment (RELAY_FETCH_ALLOW, RELAY_FETCH_TIMEOUT, RELAY_FETCH_MAX_BYTES,
// RELAY_A2A_MAX_HOPS) overrides the limits; relay up validates both before serving.
type User struct {
	Token string `json:"token"`
	Port  int    `json:"port"`
	Fetch Fetch  `json:"fetch,omitzero"`
	A2A   A2A    `json:"a2a,omitzero"`
	Store Store  `json:"store,omitzero"`
	Agent Agent  `json:"agent,omitzero"`
}

// Agent is what the person lets an agent calling relay's tools (relay mcp) do beyond the
// defaults; only the person edits this file.
type Agent struct {
	// MaxSandbox is the most a tool call may give a friend: "workspace-write" when empty;
	// "danger-full-access" lets a tool call run friends without their sandbox.
	MaxSandbox string `json:"max_sandbox,omitempty"`
}

// Store chooses the memory store (RELAY_STORE and RELAY_ARTIFACTS override it): URL is
// empty or sqlite:// for the embedded store in $RELAY_HOME, or postgres://… for a database
// shared by several daemons; Artifacts is empty (bodies in the store) or
// s3://bucket/prefix?endpoint=… (docs/team.md).
type Store struct {
	URL       string `json:"url,omitempty"`
	Artifacts string `json:"artifacts,omitempty"`
	// ArtifactsGC is the grace period of the daemon's sweeps of the artifact bucket
	// ("24h", the default) or "off".
	ArtifactsGC string `json:"artifacts_gc,omitempty"`
}

// Fetch limits the http.fetch capability.
type Fetch struct {
	// Allow lists addresses or CIDRs the SSRF guard lets through (loopback, private nets).
	Allow []string `json:"allow,omitempty"`
	// Timeout is a Go duration such as "10s".
	Timeout  string `json:"timeout,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
}

// A2A limits agent-to-agent messages.
type A2A struct {
	MaxHops int `json:"max_hops,omitempty"`
}

// Files and directories inside $RELAY_HOME.
const (
	ConfigFile = "config.json"
	InfoFile   = "daemon.json"
	PIDFile    = "daemon.pid"
	LogFile    = "daemon.log"
	LockFile   = "daemon.lock"
	DBFile     = "relay.db"
	ThreadsDir = "threads"
	AskDir     = "ask"
	// RecordKeyFile seals .relaycode/ records (internal/apply/txn).
	RecordKeyFile = "record.key"
	// TrustDir holds the project configs the person trusts (internal/trust).
	TrustDir = "trust"
)

// Dir returns $RELAY_HOME, or ~/.relay when it is unset.
func Dir() (string, error) {
	if h := os.Getenv("RELAY_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory for the relay store (set RELAY_HOME): %w", err)
	}
	return filepath.Join(home, ".relay"), nil
}

// UserFile is the user config's path inside home.
func UserFile(home string) string { return filepath.Join(home, ConfigFile) }

// LoadUser reads home's config.json; a missing file gives the defaults.
func LoadUser(home string) (*User, error) {
	u := &User{Port: DefaultPort}
	data, err := os.ReadFile(UserFile(home))
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", UserFile(home), err)
	}
	if err := json.Unmarshal(data, u); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w; fix it or delete it and run relay init", UserFile(home), err)
	}
	if u.Port == 0 {
		u.Port = DefaultPort
	}
	if u.Port < 1 || u.Port > 65535 {
		return nil, fmt.Errorf("%s: port: %d is not between 1 and 65535", UserFile(home), u.Port)
	}
	return u, nil
}

// EnsureHome creates home (0700) and, when missing, config.json (0600) with a
// fresh API token. It reports whether config.json was created.
func EnsureHome(home string) (created bool, err error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return false, fmt.Errorf("create relay store %s: %w", home, err)
	}
	path := UserFile(home)
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	u := User{Token: NewToken(), Port: DefaultPort}
	data, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil // another relay created it first
	}
	if err != nil {
		return false, fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

// NewToken returns a random 256-bit API token.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return "relay_" + hex.EncodeToString(b)
}

// EnsureToken makes sure home's config.json exists, is private (0600) and holds an
// API token, creating or adding one when missing. The daemon never serves without
// a token, so `relay up` on a fresh RELAY_HOME must not be a way to get one that
// does. It reports whether a token was created.
func EnsureToken(home string) (u *User, created bool, err error) {
	if created, err = EnsureHome(home); err != nil {
		return nil, false, err
	}
	path := UserFile(home)
	if fi, err := os.Lstat(path); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file; remove it and run relay init", path)
	} else if fi.Mode().Perm()&0o077 != 0 {
		// other local users must not read the token
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, false, fmt.Errorf("make %s private (chmod 600): %w", path, err)
		}
	}
	u, err = LoadUser(home)
	if err != nil {
		return nil, false, err
	}
	if u.Token != "" {
		return u, created, nil
	}
	// Keep whatever else the file holds; only the token is added.
	raw := map[string]any{}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, false, fmt.Errorf("%s: not a JSON object; fix it or delete it and run relay init", path)
	}
	u.Token = NewToken()
	raw["token"] = u.Token
	out, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return nil, false, err
	}
	tmp, err := os.CreateTemp(home, ".config-*.json")
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(out, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, false, fmt.Errorf("write %s: %w", path, err)
	}
	return u, true, nil
}

// IsLoopbackHost reports whether host (a --host value) only listens on loopback.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil && a.Unmap().IsLoopback()
}
