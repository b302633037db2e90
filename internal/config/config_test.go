package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/jsonschema-go/jsonschema"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    func(*Config)
		wantErr string
		warn    []string
	}{
		{name: "minimal gets defaults", in: `{"projectId":"a"}`, want: func(c *Config) {}},
		{name: "nested", in: `{"projectId":"a","patch":{"approvalMode":"manual","approvalOnErrorCount":3,"fuzzyThreshold":0.8},"git":{"autoGitBranch":true,"gitBranchTemplate":"uuid"}}`,
			want: func(c *Config) {
				c.Patch.ApprovalMode, c.Patch.ApprovalOnErrorCount, c.Patch.FuzzyThreshold = "manual", 3, 0.8
				c.Git.AutoGitBranch, c.Git.GitBranchTemplate = true, "uuid"
			}},
		{name: "flat approval yes", in: `{"projectId":"a","approval":"yes","clipboardPollInterval":100}`,
			want: func(c *Config) { c.Watcher.ClipboardPollInterval = 100 }},
		{name: "flat approval no", in: `{"projectId":"a","approval":"no","linter":"x","postCommand":"y"}`,
			want: func(c *Config) { c.Patch.ApprovalMode, c.Patch.Linter, c.Patch.PostCommand = "manual", "x", "y" }},
		{name: "nested wins over flat", in: `{"projectId":"a","approval":"no","patch":{"approvalMode":"auto"}}`,
			want: func(c *Config) {}, warn: []string{"x.json: both approval and patch.approvalMode are set; using patch.approvalMode"}},
		{name: "unknown key", in: `{"projectId":"a","watcher":{"pollInterval":5}}`, want: func(c *Config) {},
			warn: []string{`x.json: unknown key "watcher.pollInterval" is ignored`}},
		{name: "bad enum", in: `{"projectId":"a","patch":{"approvalMode":"sometimes"}}`, wantErr: `x.json: patch.approvalMode: "sometimes" is not one of auto, manual`},
		{name: "float for int", in: `{"projectId":"a","approvalOnErrorCount":1.5}`, wantErr: `x.json: approvalOnErrorCount: 1.5 is not an integer`},
		{name: "bool as string", in: `{"projectId":"a","core":{"watchConfig":"yes"}}`, wantErr: `x.json: core.watchConfig: "yes" is not true or false`},
		{name: "threshold range", in: `{"projectId":"a","patch":{"fuzzyThreshold":1.5}}`, wantErr: `x.json: patch.fuzzyThreshold: 1.5 must be at most 1`},
		{name: "section not object", in: `{"projectId":"a","git":[]}`, wantErr: `x.json: git: [] must be an object`},
		{name: "empty projectId", in: `{"projectId":" "}`, wantErr: `x.json: projectId: " " must be a non-empty string`},
		{name: "array top level", in: `[]`, wantErr: `x.json: not valid JSON: the top level must be a JSON object`},
		{name: "null", in: `null`, wantErr: `x.json: (top level): null must be a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := Parse("x.json", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default("a")
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			for _, w := range tt.warn {
				found := false
				for _, g := range warnings {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("warnings %q lack %q", warnings, w)
				}
			}
			if tt.warn == nil && len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestErrorIsTyped(t *testing.T) {
	_, _, err := Parse("f.json", []byte(`{"projectId":"a","git":{"gitBranchTemplate":"x"}}`))
	var ce *Error
	if !errors.As(err, &ce) || ce.Path != "git.gitBranchTemplate" || ce.Value != `"x"` {
		t.Fatalf("err = %#v", err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	cfg := Default("round")
	cfg.Schema = SchemaRef
	cfg.Patch.Linter = "go vet ./..."
	data, err := Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, warnings, err := Parse("r.json", data)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("re-parse: %v %v", err, warnings)
	}
	if diff := cmp.Diff(cfg, got, cmpopts.IgnoreFields(Config{}, "File", "Dir")); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestSchemaAcceptsDefaults validates the written defaults against the
// shipped schema and checks the schema rejects what Parse rejects.
func TestSchemaAcceptsDefaults(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	sch, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(b []byte) any {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	data, _ := Marshal(Default("x"))
	if err := sch.Validate(decode(data)); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if sch.Validate(decode([]byte(`{"projectId":"x","patch":{"approvalMode":"sometimes"}}`))) == nil {
		t.Error("schema accepts approvalMode sometimes")
	}
}

func TestFindWalksUp(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(sub); !IsNotFound(err) {
		t.Fatalf("Find in empty tree: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "relay.config.json"), []byte(`{"projectId":"legacy"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(sub)
	if err != nil || cfg.ProjectID != "legacy" || cfg.Dir != root {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
	if err := os.WriteFile(filepath.Join(root, "relaycode.config.json"), []byte(`{"projectId":"new"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := Load(sub); cfg.ProjectID != "new" {
		t.Errorf("relaycode.config.json should win, got %q", cfg.ProjectID)
	}
}

// TestFindStopsAtBoundaries: the search never leaves the git work tree, stays
// in the start directory outside one, never climbs into $HOME from below,
// and refuses a config another user owns.
func TestFindStopsAtBoundaries(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	t.Setenv("HOME", home)
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"projectId":"x"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, "relaycode.config.json"))
	write(filepath.Join(base, "relaycode.config.json"))
	nogit := filepath.Join(home, "src", "x")
	if err := os.MkdirAll(nogit, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(nogit); !IsNotFound(err) {
		t.Errorf("outside a repository the search left the start directory: %v", err)
	}
	repo := filepath.Join(home, "src", "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(filepath.Join(repo)); !IsNotFound(err) {
		t.Errorf("the search left the work tree: %v", err)
	}
	// a dotfiles repository at $HOME: still never into $HOME from below
	if err := os.MkdirAll(filepath.Join(home, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(nogit); !IsNotFound(err) {
		t.Errorf("the search climbed into $HOME: %v", err)
	}
	if got, err := Find(home); err != nil || got != filepath.Join(home, "relaycode.config.json") {
		t.Errorf("in $HOME itself its config is found: %q %v", got, err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "shared")
		write(filepath.Join(other, "relaycode.config.json"))
		if err := os.Chown(filepath.Join(other, "relaycode.config.json"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Find(other); !IsNotOwned(err) {
			t.Errorf("a config owned by another user was accepted: %v", err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"projectId":"a","patch":{"approvalMode":"manual"}}`))
	f.Add([]byte(`{"projectId":"a","approval":"yes","clipboardPollInterval":1e3}`))
	f.Add([]byte(`{"projectId":"a","watcher":{"clipboardPollInterval":99999999999999999999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := Parse("f.json", data)
		if err != nil {
			return
		}
		// Anything accepted must re-marshal and re-parse to the same config.
		out, err := Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatal("Marshal produced invalid JSON")
		}
		again, _, err := Parse("f.json", out)
		if err != nil {
			t.Fatalf("re-parse of accepted config: %v\n%s", err, out)
		}
		if diff := cmp.Diff(cfg, again); diff != "" {
			t.Fatalf("round trip changed the config:\n%s", diff)
		}
	})
}
