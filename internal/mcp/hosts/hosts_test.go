package hosts

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport"
)

var srv = Server{Command: "/usr/local/bin/relay", Args: []string{"mcp"}}

func TestJSONRoundTrip(t *testing.T) {
	for name, doc := range map[string]string{
		"absent":      "",
		"empty":       "{}\n",
		"other-keys":  "{\n  \"theme\": \"dark\",\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}\n}\n",
		"servers":     "{\n    \"mcpServers\": {\n        \"other\": {\n            \"command\": \"x\"\n        }\n    },\n    \"z\": 1\n}",
		"compact":     `{"a":1,"mcpServers":{"other":{"command":"x"}}}`,
		"jsonc":       "{\n  // my servers\n  \"mcpServers\": {\n    /* keep */ \"other\": {\"command\": \"x\"}, // trailing\n  },\n}\n",
		"tabs":        "{\n\t\"mcpServers\": {\n\t\t\"a\": {}\n\t}\n}\n",
		"emptyserver": "{\n  \"mcpServers\": {}\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			entry := jsonEntry("gemini", srv)
			got, err := setJSONEntry([]byte(doc), entry)
			if err != nil {
				t.Fatal(err)
			}
			raw, ok, err := GetJSON(got, "mcpServers", "relay")
			if err != nil || !ok {
				t.Fatalf("relay entry missing after install: %v\n%s", err, got)
			}
			want, _ := json.Marshal(entry)
			if !jsonEqual(raw, want) {
				t.Fatalf("entry %s, want %s", raw, want)
			}
			if !strings.Contains(doc, "//") && !json.Valid(got) {
				t.Fatalf("invalid JSON:\n%s", got)
			}
			again, err := setJSONEntry(got, entry)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("second install changed the file:\n%s\n---\n%s", got, again)
			}
			back, found, err := DeleteJSON(got, true, "mcpServers", "relay")
			if err != nil || !found {
				t.Fatalf("uninstall: %v %v", found, err)
			}
			if doc != "" && doc != "{}\n" && string(back) != doc && name != "emptyserver" {
				t.Fatalf("uninstall did not give back the file:\n%q\nwant\n%q", back, doc)
			}
			t.Logf("installed:\n%s", got)
		})
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	doc := `# my codex config
model = "o3"

[mcp_servers.other]
command = "other"   # keep this comment
args = ["--x"]

[mcp_servers.other.env]
K = "V"

[profiles.fast]
model = "mini"
`
	block := codexBlock(Server{Command: `C:\relay "x"`, Args: []string{"mcp"}, Env: map[string]string{"RELAY_HOME": "/h/.relay"}, ReadTools: []string{"read"}})
	got, err := SetTOMLTable([]byte(doc), "mcp_servers.relay", block)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), doc) {
		t.Fatalf("install changed existing lines:\n%s", got)
	}
	v, err := decodeTOML(got)
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := tomlTable(v, "mcp_servers", "relay")
	tools, _ := tab["tools"].(map[string]any)
	read, _ := tools["read"].(map[string]any)
	if tab["command"] != `C:\relay "x"` || tab["default_tools_approval_mode"] != nil || read["approval_mode"] != "approve" {
		t.Fatalf("table %v: want the read tool approved and no default approval", tab)
	}
	writes := codexBlock(Server{Command: "relay", ReadTools: []string{"read"}, AllowWrites: true})
	if !strings.Contains(writes, `default_tools_approval_mode = "approve"`) {
		t.Fatalf("--allow-writes block:\n%s", writes)
	}
	again, err := SetTOMLTable(got, "mcp_servers.relay", block)
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("second install changed the file:\n%s", again)
	}
	// an older relay table in the middle is replaced in place
	mid := strings.Replace(doc, "[profiles.fast]", "[mcp_servers.relay]\ncommand = \"old\"\n\n[mcp_servers.relay.env]\nA = \"b\"\n# about profiles\n[profiles.fast]", 1)
	got2, err := SetTOMLTable([]byte(mid), "mcp_servers.relay", block)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got2), "\n# about profiles\n[profiles.fast]") || strings.Contains(string(got2), `"old"`) || strings.Contains(string(got2), `A = "b"`) {
		t.Fatalf("replace in place:\n%s", got2)
	}
	back, found, err := DeleteTOMLTable(got, "mcp_servers.relay")
	if err != nil || !found || string(back) != doc {
		t.Fatalf("uninstall: %v %v\n%q", found, err, back)
	}
	if _, err := SetTOMLTable([]byte("[mcp_servers]\nrelay = { command = \"x\" }\n"), "mcp_servers.relay", block); err == nil {
		t.Fatal("an inline relay table was edited")
	}
	if _, err := SetTOMLTable([]byte("[broken\n"), "mcp_servers.relay", block); err == nil {
		t.Fatal("invalid TOML was edited")
	}
}

func TestInstallUninstallFiles(t *testing.T) {
	home := t.TempDir()
	env := Env{Home: home, ProjectDir: filepath.Join(home, "proj"), Getenv: func(string) string { return "" }}
	for _, host := range Names {
		changes, err := Install(host, User, env, srv)
		if err != nil || len(changes) == 0 {
			t.Fatalf("%s: %v %v", host, changes, err)
		}
		for _, c := range changes {
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if again, err := Install(host, User, env, srv); err != nil || len(again) != 0 && !again[0].Skip {
			t.Fatalf("%s: second install: %v %v", host, again, err)
		}
		st := Status(host, env)
		if !st[0].Registered || st[0].Command != srv.Command || st[1].Registered {
			t.Fatalf("%s status %+v", host, st)
		}
		un, err := Uninstall(host, User, env)
		if err != nil || len(un) != len(changes) {
			t.Fatalf("%s uninstall: %v %v", host, un, err)
		}
	}
	// a user's own /relay-ask is never touched
	own := filepath.Join(home, ".claude", "commands", "relay-ask.md")
	if err := os.WriteFile(own, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes, _ := Install("claude", User, env, srv)
	for _, c := range changes {
		if c.Path == own && !c.Skip {
			t.Fatal("install would overwrite the user's own command")
		}
	}
}

func FuzzSetJSON(f *testing.F) {
	for _, s := range []string{"{}", `{"mcpServers":{"a":1}}`, "{\n  \"a\": [1, {\"b\": null}]\n}", "{\"mcpServers\": {\"relay\": 3}} // c", "{\"x\":\"\\u00e9\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if _, err := topObject([]byte(doc)); err != nil {
			return
		}
		got, err := setJSONEntry([]byte(doc), jsonEntry("qwen", srv))
		if err != nil {
			return // refusing is fine; breaking the file is not
		}
		if _, err := topObject(got); err != nil {
			t.Fatalf("install made an unparsable file from %q:\n%s", doc, got)
		}
		if json.Valid([]byte(doc)) && !json.Valid(got) {
			t.Fatalf("install made invalid JSON from %q:\n%s", doc, got)
		}
		back, found, err := DeleteJSON(got, false, "mcpServers", "relay")
		if err != nil || !found {
			t.Fatalf("uninstall after install: %v %v\n%s", found, err, got)
		}
		if _, ok, _ := GetJSON(back, "mcpServers", "relay"); ok && !strings.Contains(doc, `"relay"`) {
			t.Fatalf("relay still there after uninstall:\n%s", back)
		}
	})
}

func FuzzTOMLTable(f *testing.F) {
	f.Add("a = 1\n")
	f.Add("[mcp_servers.x]\ncommand = \"y\"\n")
	f.Add("s = \"\"\"\n[mcp_servers.relay]\n\"\"\"\n")
	f.Fuzz(func(t *testing.T, doc string) {
		if _, err := decodeTOML([]byte(doc)); err != nil {
			return
		}
		got, err := SetTOMLTable([]byte(doc), "mcp_servers.relay", codexBlock(srv))
		if err != nil {
			return
		}
		v, err := decodeTOML(got)
		if err != nil {
			t.Fatalf("invalid TOML after install from %q", doc)
		}
		if tab, ok := tomlTable(v, "mcp_servers", "relay"); !ok || tab["command"] != srv.Command {
			t.Fatalf("relay not registered from %q:\n%s", doc, got)
		}
	})
}

// TestTOMLTableFoundByParser: relay's table is found by a TOML parser, not by
// looking at lines: quoted keys with dots, escaped quotes in multi-line
// strings and headers inside strings do not fool it.
func TestTOMLTableFoundByParser(t *testing.T) {
	block := codexBlock(srv)
	for _, tc := range []struct {
		name, doc string
	}{
		{"quoted key with a dot is another server", "[mcp_servers.\"relay.dev\"]\ncommand = \"theirs\"\n"},
		{"escaped quotes in a multi-line string", "[notes]\ntext = \"\"\"a \\\"\"\" b\n[mcp_servers.relay]\ncommand = \"inside the string\"\n\"\"\"\n\n[profiles.fast]\nmodel = \"mini\"\n"},
		{"header inside a literal multi-line string", "x = '''\n[mcp_servers.relay]\n'''\n[other]\nk = 1\n"},
		{"relay table first, then others", "[mcp_servers.relay]\ncommand = \"old\"\n\n[z]\ns = \"\"\"\nq \\\"\"\"\n\"\"\"\n[y]\nk = 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := decodeTOML([]byte(tc.doc))
			if err != nil {
				t.Fatalf("test doc is not TOML: %v", err)
			}
			got, err := SetTOMLTable([]byte(tc.doc), "mcp_servers.relay", block)
			if err != nil {
				t.Fatal(err)
			}
			after, err := decodeTOML(got)
			if err != nil {
				t.Fatal(err)
			}
			if !sameExceptTable(before, after, []string{"mcp_servers", "relay"}) {
				t.Fatalf("install changed other tables:\n%s", got)
			}
			if tab, ok := tomlTable(after, "mcp_servers", "relay"); !ok || tab["command"] != srv.Command {
				t.Fatalf("relay not registered:\n%s", got)
			}
			back, found, err := DeleteTOMLTable(got, "mcp_servers.relay")
			if err != nil || !found {
				t.Fatalf("uninstall: %v %v", found, err)
			}
			left, err := decodeTOML(back)
			if err != nil {
				t.Fatal(err)
			}
			if lookup(left, []string{"mcp_servers", "relay"}) || !sameExceptTable(before, left, []string{"mcp_servers", "relay"}) {
				t.Fatalf("uninstall changed other tables:\n%s", back)
			}
		})
	}
}

// TestDuplicateJSONKeysAllRemoved: a host reads the last of duplicate keys;
// uninstall removes every copy so none is left registered.
func TestDuplicateJSONKeysAllRemoved(t *testing.T) {
	doc := `{"mcpServers": {"relay": {"command": "a"}, "other": {}, "relay": {"command": "b"}}}`
	back, found, err := DeleteJSON([]byte(doc), true, "mcpServers", "relay")
	if err != nil || !found {
		t.Fatal(found, err)
	}
	if bytes.Contains(back, []byte(`"relay"`)) {
		t.Fatalf("a relay entry is left:\n%s", back)
	}
	if !bytes.Contains(back, []byte(`"other"`)) {
		t.Fatalf("another server went too:\n%s", back)
	}
}

// TestProjectFilesRefuseLinksAndFIFOs: a clone's links and FIFOs are refused
// before anything is read; a user-scope link is written through.
func TestProjectFilesRefuseLinksAndFIFOs(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	secret := filepath.Join(home, "secret.json")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte(`{"token":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env{Home: home, ProjectDir: proj, Getenv: func(string) string { return "" }}
	if err := os.Symlink(secret, filepath.Join(proj, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Install("claude", Project, env, srv); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("project link followed: %v", err)
	}
	if err := os.Symlink(home, filepath.Join(proj, ".gemini")); err != nil {
		t.Fatal(err)
	}
	if _, err := Install("gemini", Project, env, srv); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("linked project dir followed: %v", err)
	}
	if err := testsupport.Mkfifo(t, filepath.Join(proj, ".qwen"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Install("qwen", Project, env, srv); err == nil {
		t.Fatal("a FIFO on the path was accepted")
	}
	// user scope: ~/.claude.json is a link into a dotfiles directory
	dots := filepath.Join(home, "dotfiles")
	if err := os.MkdirAll(dots, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dots, "claude.json")
	if err := os.WriteFile(real, []byte(`{"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".claude.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	changes, err := Install("claude", User, env, srv)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if err := WriteChange(c); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the user's link was replaced: %v", err)
	}
	b, _ := os.ReadFile(real)
	if !bytes.Contains(b, []byte(`"relay"`)) || !bytes.Contains(b, []byte(`"theme"`)) {
		t.Fatalf("target not edited: %s", b)
	}
}
