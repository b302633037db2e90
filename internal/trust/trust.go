// Package trust records which project configs the person allowed, on this
// machine, to name the commands relay runs (patch.preCommand, postCommand,
// linter, clipboard.readCommand). A config may have come with a clone: its
// commands run only once the person trusted that exact file, as direnv does
// for .envrc. A record is keyed by the config's path and a hash of its
// content, so any change to the file, or the same file in another place,
// needs the person again. An agent (a tool call through relay mcp) can never
// give trust: only the person can, with relay trust or at a terminal prompt.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/safeopen"
)

// Store is the trust records in a relay home.
type Store struct{ Dir string }

// Open returns the store in the relay home home.
func Open(home string) Store { return Store{Dir: filepath.Join(home, relayhome.TrustDir)} }

// Record is one trusted config.
type Record struct {
	File      string    `json:"file"`
	SHA256    string    `json:"sha256"` // of the content
	TrustedAt time.Time `json:"trustedAt"`
	// Current is false when the file no longer has this content (list only).
	Current bool `json:"current"`
}

// key identifies a config by its absolute path and its content.
func key(file string, data []byte) (string, string) {
	sum := sha256.Sum256(data)
	content := hex.EncodeToString(sum[:])
	k := sha256.Sum256([]byte(file + "\x00" + content))
	return hex.EncodeToString(k[:]), content
}

func (s Store) path(k string) string { return filepath.Join(s.Dir, k+".json") }

// Trusted reports whether the person trusts the config file with exactly data.
func (s Store) Trusted(file string, data []byte) bool {
	k, content := key(file, data)
	b, err := safeopen.ReadFile(s.path(k), false, 64<<10)
	if err != nil {
		return false
	}
	var r Record
	return json.Unmarshal(b, &r) == nil && r.File == file && r.SHA256 == content
}

// Allow records that the person trusts the config file with exactly data.
func (s Store) Allow(file string, data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	k, content := key(file, data)
	b, _ := json.MarshalIndent(Record{File: file, SHA256: content, TrustedAt: time.Now().UTC()}, "", "  ")
	return atomicfile.WriteFile(s.path(k), append(b, '\n'), 0o600)
}

// Revoke removes every record of file (any content) and returns how many.
func (s Store) Revoke(file string) (int, error) {
	all, err := s.List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range all {
		if r.File != file {
			continue
		}
		k, _ := keyOf(r)
		if err := os.Remove(s.path(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	return n, nil
}

func keyOf(r Record) (string, string) {
	k := sha256.Sum256([]byte(r.File + "\x00" + r.SHA256))
	return hex.EncodeToString(k[:]), r.SHA256
}

// List returns every record, by file; Current says whether the file still
// has the trusted content.
func (s Store) List() ([]Record, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		b, err := safeopen.ReadFile(filepath.Join(s.Dir, e.Name()), false, 64<<10)
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		if k, _ := keyOf(r); k != name {
			continue // not a record this package wrote
		}
		if data, err := safeopen.ReadFile(r.File, true, maxConfig); err == nil {
			_, content := key(r.File, data)
			r.Current = content == r.SHA256
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].TrustedAt.After(out[j].TrustedAt)
	})
	return out, nil
}

// maxConfig bounds a config read to hash it.
const maxConfig = 16 << 20

// Command is one command a config names.
type Command struct {
	Key     string // the config key, e.g. patch.preCommand
	Command string
}

// Commands lists the commands cfg names, in the order a transaction runs them.
func Commands(cfg *config.Config) []Command {
	var out []Command
	for _, c := range []Command{
		{"patch.preCommand", cfg.Patch.PreCommand},
		{"patch.linter", cfg.Patch.Linter},
		{"patch.postCommand", cfg.Patch.PostCommand},
		{"clipboard.readCommand", cfg.Clipboard.ReadCommand},
	} {
		if strings.TrimSpace(c.Command) != "" {
			out = append(out, c)
		}
	}
	return out
}

// Asker asks the person at a terminal whether to trust a config; nil means
// nobody can be asked (no terminal, or the caller is an agent).
type Asker func(question string) (bool, error)

// Decision is what a command may run of a config.
type Decision struct {
	// Trusted: the config's commands run.
	Trusted bool
	// Skipped are the commands left out because the config is not trusted.
	Skipped []Command
}

// Note is the one-line reason for skipped commands ("" when none were).
func (d Decision) Note(file string) string {
	if len(d.Skipped) == 0 {
		return ""
	}
	keys := make([]string, len(d.Skipped))
	for i, c := range d.Skipped {
		keys[i] = c.Key
	}
	return fmt.Sprintf("%s is not trusted on this machine, so relay did not run its %s", filepath.Base(file), strings.Join(keys, ", "))
}

// Hint is the way to trust the config, for the person.
const Hint = "read the config, then relay trust   (it runs those commands as you; relay trust --revoke takes it back)"

// Gate decides whether cfg's commands may run: yes when the config names
// none, or the person trusts this exact file; else ask (when not nil) asks
// the person and records a yes. The config's bytes are read again here, so
// what is trusted is what is on disk.
func (s Store) Gate(cfg *config.Config, ask Asker) (Decision, error) {
	cmds := Commands(cfg)
	if len(cmds) == 0 || cfg.File == "" {
		return Decision{Trusted: true}, nil
	}
	data, err := safeopen.ReadFile(cfg.File, true, maxConfig)
	if err != nil {
		return Decision{Skipped: cmds}, nil
	}
	parsed, _, err := config.Parse(filepath.Base(cfg.File), data)
	if err != nil || !sameCommands(Commands(parsed), cmds) {
		// the file changed since it was loaded: trust neither version
		return Decision{Skipped: cmds}, nil
	}
	if s.Trusted(cfg.File, data) {
		return Decision{Trusted: true}, nil
	}
	if ask != nil {
		var q strings.Builder
		fmt.Fprintf(&q, "%s asks relay to run these commands as you:\n", cfg.File)
		for _, c := range cmds {
			fmt.Fprintf(&q, "  %s: %s\n", c.Key, c.Command)
		}
		q.WriteString("Trust this config on this machine? (y/N) ")
		ok, err := ask(q.String())
		if err != nil {
			return Decision{Skipped: cmds}, err
		}
		if ok {
			if err := s.Allow(cfg.File, data); err != nil {
				return Decision{Skipped: cmds}, err
			}
			return Decision{Trusted: true}, nil
		}
	}
	return Decision{Skipped: cmds}, nil
}

func sameCommands(a, b []Command) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Strip returns cfg without the commands of d.Skipped.
func Strip(cfg *config.Config, d Decision) *config.Config {
	if d.Trusted {
		return cfg
	}
	c := *cfg
	c.Patch.PreCommand, c.Patch.PostCommand, c.Patch.Linter = "", "", ""
	c.Clipboard.ReadCommand = ""
	return &c
}
