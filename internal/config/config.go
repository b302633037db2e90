// Package config loads and validates a project's relaycode.config.json: both the
// flat keys older relaycode configs use and the nested ones (core, watcher, patch, git).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/relaydev/relay/internal/suggest"
)

// FileNames are the project config files relay reads, in order of preference.
var FileNames = []string{"relaycode.config.json", "relay.config.json"}

// SchemaRef is the "$schema" written into new configs; init writes the
// schema there so editors can complete and check the file.
const SchemaRef = "./.relaycode/config.schema.json"

// StateDir is the project's transaction directory.
const StateDir = ".relaycode"

// Config is a project's configuration with every default filled in.
type Config struct {
	Schema    string    `json:"$schema,omitempty"`
	ProjectID string    `json:"projectId"`
	Core      Core      `json:"core"`
	Watcher   Watcher   `json:"watcher"`
	Patch     Patch     `json:"patch"`
	Git       Git       `json:"git"`
	Clipboard Clipboard `json:"clipboard"`

	// File is the path the config was read from; Dir is the project root.
	File string `json:"-"`
	Dir  string `json:"-"`
}

// Core holds general settings.
type Core struct {
	LogLevel            string `json:"logLevel"`
	EnableNotifications bool   `json:"enableNotifications"`
	WatchConfig         bool   `json:"watchConfig"`
}

// Watcher holds `relay watch` settings.
type Watcher struct {
	ClipboardPollInterval int    `json:"clipboardPollInterval"`
	PreferredStrategy     string `json:"preferredStrategy"`
}

// Patch holds transaction settings.
type Patch struct {
	ApprovalMode         string  `json:"approvalMode"`
	ApprovalOnErrorCount int     `json:"approvalOnErrorCount"`
	Linter               string  `json:"linter"`
	PreCommand           string  `json:"preCommand"`
	PostCommand          string  `json:"postCommand"`
	FuzzyThreshold       float64 `json:"fuzzyThreshold"`
	MinFileChanges       int     `json:"minFileChanges"`
	MaxFileChanges       int     `json:"maxFileChanges"`
}

// Git holds git integration settings.
type Git struct {
	AutoGitBranch     bool   `json:"autoGitBranch"`
	GitBranchPrefix   string `json:"gitBranchPrefix"`
	GitBranchTemplate string `json:"gitBranchTemplate"`
}

// Clipboard holds clipboard overrides.
type Clipboard struct {
	ReadCommand string `json:"readCommand"`
}

// Default returns the configuration used for every key a file leaves out.
// The linter is empty (disabled): relaycode's `bun tsc --noEmit` default fails
// in every project without bun; `relay init` picks one for the project instead.
func Default(projectID string) *Config {
	return &Config{
		ProjectID: projectID,
		Core:      Core{LogLevel: "info", EnableNotifications: true, WatchConfig: true},
		Watcher:   Watcher{ClipboardPollInterval: 2000, PreferredStrategy: "auto"},
		Patch:     Patch{ApprovalMode: "auto", FuzzyThreshold: 0.9},
		Git:       Git{GitBranchPrefix: "relay/", GitBranchTemplate: "gitCommitMsg"},
	}
}

// NotFoundError means no config file exists in dir or any parent.
type NotFoundError struct{ Dir string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s found in %s or any parent directory", FileNames[0], e.Dir)
}

// Error is an invalid config value: file, key path, bad value, what is allowed.
type Error struct {
	File    string
	Path    string
	Value   string // JSON of the bad value, "" when the key is missing
	Allowed string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Allowed)
	}
	return fmt.Sprintf("%s: %s: %s %s", e.File, e.Path, e.Value, e.Allowed)
}

// Find returns the config file that governs dir: the first of FileNames in
// dir or the nearest parent, searching no higher than the root of the git
// work tree dir is in (only dir itself when it is in none), and never into
// the home directory from below it: a relaycode.config.json in $HOME or in a
// shared parent such as /tmp does not make every directory under it a relay
// project. A config owned by another user is refused (*NotOwnedError), as
// git refuses a repository another user owns.
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	top := workTreeRoot(abs)
	home := homeDir()
	for d := abs; ; d = filepath.Dir(d) {
		if d != abs && d == home {
			break // never into $HOME from below
		}
		for _, name := range FileNames {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				if err := checkOwner(p, st); err != nil {
					return "", err
				}
				return p, nil
			}
		}
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	return "", &NotFoundError{Dir: abs}
}

// workTreeRoot is the nearest directory at or above dir holding .git (a
// directory, or the file of a linked work tree or submodule); dir itself
// when there is none.
func workTreeRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// homeDir is the user's home directory, cleaned and with links resolved;
// "" when unknown.
func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return ""
	}
	if abs, err := filepath.Abs(h); err == nil {
		h = abs
	}
	return filepath.Clean(h)
}

// NotOwnedError is a config file that another user owns: whoever can write
// it chooses the commands relay runs.
type NotOwnedError struct {
	File  string
	Owner int
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s is owned by another user (uid %d), not by you; relay does not read a config another user can change (it names the commands relay runs)", e.File, e.Owner)
}

// Load finds and parses the config governing dir. Warnings (unknown keys,
// flat and nested spellings of one key) do not stop loading.
func Load(dir string) (*Config, []string, error) {
	file, err := Find(dir)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	cfg, warnings, err := Parse(filepath.Base(file), data)
	if err != nil {
		return nil, warnings, err
	}
	cfg.File = file
	cfg.Dir = filepath.Dir(file)
	return cfg, warnings, nil
}

// Parse validates a config file's bytes; name is used in messages.
func Parse(name string, data []byte) (*Config, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, fmt.Errorf("%s: not valid JSON: %s", name, jsonErrorText(data, err))
	}
	if raw == nil {
		return nil, nil, &Error{File: name, Path: "(top level)", Value: "null", Allowed: "must be a JSON object"}
	}
	cfg := Default("")
	var warnings []string
	seen := map[string]bool{}

	if v, ok := raw["$schema"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, nil, &Error{File: name, Path: "$schema", Value: show(v), Allowed: "is not a string"}
		}
		cfg.Schema = s
	}
	pid, ok := raw["projectId"]
	if !ok {
		return nil, nil, &Error{File: name, Path: "projectId", Allowed: "is missing; set it to the projectId your LLM puts in its responses"}
	}
	if s, isStr := pid.(string); !isStr || strings.TrimSpace(s) == "" {
		return nil, nil, &Error{File: name, Path: "projectId", Value: show(pid), Allowed: "must be a non-empty string"}
	} else {
		cfg.ProjectID = s
	}
	seen["$schema"], seen["projectId"] = true, true

	sections := map[string]map[string]any{}
	for key, v := range raw {
		switch key {
		case "core", "watcher", "patch", "git", "clipboard":
			obj, isObj := v.(map[string]any)
			if !isObj {
				return nil, nil, &Error{File: name, Path: key, Value: show(v), Allowed: "must be an object"}
			}
			sections[key] = obj
			seen[key] = true
		}
	}

	for _, f := range fields {
		section, key, _ := strings.Cut(f.path, ".")
		nested, hasNested := sections[section][key]
		flat, hasFlat := raw[f.flat]
		if f.flat != "" && hasFlat {
			seen[f.flat] = true
		}
		val, path := nested, f.path
		switch {
		case hasNested && hasFlat:
			warnings = append(warnings, fmt.Sprintf("%s: both %s and %s are set; using %s", name, f.flat, f.path, f.path))
		case hasFlat:
			val, path = flat, f.flat
			if f.rawFlat != nil {
				if conv, ok := f.rawFlat(flat); ok {
					val = conv
				} else {
					return nil, nil, &Error{File: name, Path: path, Value: show(flat), Allowed: `is not one of yes, no`}
				}
			}
		case !hasNested:
			continue
		}
		typed, err := check(name, path, f, val)
		if err != nil {
			return nil, nil, err
		}
		f.set(cfg, typed)
	}

	for key := range raw {
		if !seen[key] {
			warnings = append(warnings, unknownKey(name, key, ""))
		}
	}
	for section, obj := range sections {
		for key := range obj {
			if !knownNested(section + "." + key) {
				warnings = append(warnings, unknownKey(name, key, section))
			}
		}
	}
	sort.Strings(warnings)
	return cfg, warnings, nil
}

func check(file, path string, f field, v any) (any, error) {
	bad := func(allowed string) error { return &Error{File: file, Path: path, Value: show(v), Allowed: allowed} }
	switch f.kind {
	case kString:
		s, ok := v.(string)
		if !ok {
			return nil, bad("is not " + f.kind.String())
		}
		if len(f.enum) > 0 && !contains(f.enum, s) {
			return nil, bad("is not one of " + strings.Join(f.enum, ", "))
		}
		return s, nil
	case kBool:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("is not " + f.kind.String())
		}
		return b, nil
	case kInt, kNumber:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("is not " + f.kind.String())
		}
		x, err := n.Float64()
		if err != nil || math.IsInf(x, 0) {
			return nil, bad("is not " + f.kind.String())
		}
		if f.kind == kInt && (x != math.Trunc(x) || math.Abs(x) > 1<<31) {
			return nil, bad("is not " + f.kind.String())
		}
		if f.min != nil && x < *f.min {
			return nil, bad("must be at least " + num(*f.min))
		}
		if f.max != nil && x > *f.max {
			return nil, bad("must be at most " + num(*f.max))
		}
		if f.kind == kInt {
			return int(x), nil
		}
		return x, nil
	}
	return nil, bad("has an unsupported type")
}

func knownNested(path string) bool {
	for _, f := range fields {
		if f.path == path {
			return true
		}
	}
	return false
}

func unknownKey(file, key, section string) string {
	full := key
	if section != "" {
		full = section + "." + key
	}
	msg := fmt.Sprintf("%s: unknown key %q is ignored", file, full)
	if s := suggestKey(full); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// suggestKey returns the known key closest to key by edit distance, if close.
func suggestKey(key string) string {
	best, bestD := "", 4
	candidates := []string{"projectId", "$schema"}
	for _, f := range fields {
		candidates = append(candidates, f.path)
		if f.flat != "" {
			candidates = append(candidates, f.flat)
		}
	}
	for _, c := range candidates {
		if d := suggest.Distance(strings.ToLower(key), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// jsonErrorText adds the line and column to a JSON syntax error.
func jsonErrorText(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		col := int(se.Offset) - bytes.LastIndexByte(data[:se.Offset], '\n') - 1
		return fmt.Sprintf("line %d, column %d: %s", line, col, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "the top level must be a JSON object"
	}
	return err.Error()
}

// Marshal renders cfg as the nested file `relay init` writes.
func Marshal(cfg *Config) ([]byte, error) {
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// IsNotOwned reports whether err is a config another user owns.
func IsNotOwned(err error) bool {
	var no *NotOwnedError
	return errors.As(err, &no)
}

// IsNotFound reports whether err means there is no project config.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf) || errors.Is(err, fs.ErrNotExist)
}
