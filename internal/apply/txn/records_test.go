package txn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const recID = "0badc0de-0000-4000-8000-000000000001"

func TestRecordValidation(t *testing.T) {
	base := "uuid: " + recID + "\nsnapshot:\n  a.txt: \"x\"\n"
	tests := []struct {
		name, body, want string
	}{
		{"valid", base, ""},
		{"valid mode", base + "modes:\n  a.txt: \"0755\"\n", ""},
		{"uuid traversal", "uuid: ../../..\nsnapshot: {}\n", "not a valid UUID"},
		{"uuid other record", "uuid: 0badc0de-0000-4000-8000-000000000002\nsnapshot: {}\n", "not the uuid in its file name"},
		{"git path", "uuid: " + recID + "\nsnapshot:\n  .git/config: x\n", "files inside .git/"},
		{"dotdot path", "uuid: " + recID + "\nsnapshot:\n  ../x: x\n", `".." is not allowed`},
		{"unclean path", "uuid: " + recID + "\nsnapshot:\n  a//b: x\n", "not in clean form"},
		{"setuid", base + "modes:\n  a.txt: \"4755\"\n", "bits other than permissions"},
		{"sticky", base + "modes:\n  a.txt: \"1644\"\n", "bits other than permissions"},
		{"mode garbage", base + "modes:\n  a.txt: rw\n", "not an octal number"},
		{"created dir in git", base + "createdDirs:\n  - .git/hooks\n", "files inside .git/"},
		{"after path", base + "after:\n  /etc/passwd: absent\n", "absolute paths"},
		{"operation path", base + "operations:\n  - type: write\n    path: .relaycode/x\n", "relay's own records"},
		{"revertOf", base + "revertOf: ../x\n", "revertOf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := unmarshalState([]byte(tc.body))
			if err == nil {
				err = st.validate(recID)
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSeal(t *testing.T) {
	body := []byte("uuid: " + recID + "\n")
	sealed := seal(testKey, body)
	if got, err := unseal(testKey, sealed); err != nil || string(got) != string(body) {
		t.Fatalf("unseal(seal) = %q, %v", got, err)
	}
	for name, data := range map[string][]byte{
		"no seal":      body,
		"other key":    seal([]byte("another key another key another!"), body),
		"edited body":  append([]byte("uuid: x\n"), sealed[len(body):]...),
		"empty":        nil,
		"no newline":   sealed[:len(sealed)-1],
		"seal only":    sealed[len(body):],
		"seal doubled": append(sealed, sealed[len(body):]...),
	} {
		if name == "seal only" {
			// The MAC of an empty body is valid for an empty body: an empty record, which parsing refuses.
			continue
		}
		if _, err := unseal(testKey, data); err == nil {
			t.Errorf("%s: unseal accepted it", name)
		}
	}
	if _, err := unseal(nil, sealed); err == nil {
		t.Errorf("no key: unseal accepted a record")
	}
}

func TestRecordKeyFile(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	k1, err := LoadRecordKey(home)
	if err != nil || len(k1) != 32 {
		t.Fatalf("LoadRecordKey = %x, %v", k1, err)
	}
	fi, err := os.Stat(filepath.Join(home, RecordKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	k2, err := LoadRecordKey(home)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("second load gave another key")
	}
	if err := os.WriteFile(filepath.Join(home, RecordKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecordKey(home); err == nil {
		t.Errorf("a malformed key file was accepted")
	}
}

// A record another process could have planted is never acted on, and a
// record that is ours but invalid stops recovery with a RecordError.
func TestRecoverRefusesForeignAndInvalidRecords(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "now"})
	if err := os.MkdirAll(filepath.Join(dir, StateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	body := []byte("uuid: " + recID + "\nsnapshot:\n  a.txt: before\n")
	if err := os.WriteFile(pendingPath(dir, recID), body, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := Recover(dir, testKey)
	if err != nil || len(rec) != 1 || rec[0].Refused == "" {
		t.Fatalf("Recover(unsealed) = %+v, %v; want it refused", rec, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "now" {
		t.Fatalf("an unsealed record was acted on")
	}
	bad := []byte("uuid: " + recID + "\nsnapshot:\n  .git/config: x\n")
	if err := os.WriteFile(pendingPath(dir, recID), seal(testKey, bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Recover(dir, testKey)
	var re *RecordError
	if err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), "files inside .git/") {
		t.Fatalf("Recover(sealed invalid) = %v; want a RecordError naming the path rule", err)
	}
	if err := os.WriteFile(pendingPath(dir, recID), seal(testKey, body), 0o644); err != nil {
		t.Fatal(err)
	}
	if rec, err := Recover(dir, testKey); err != nil || len(rec) != 1 || rec[0].Refused != "" {
		t.Fatalf("Recover(sealed valid) = %+v, %v", rec, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "before" {
		t.Fatalf("a.txt = %q after recovery", b)
	}
}

func TestResolveRefusesLinksIntoGit(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{".git/config": "c", "docs/a.md": "a"})
	for link, target := range map[string]string{"g": ".git", "d": "docs", "loop": "loop", "up": "..", "c1": "c2", "c2": "g"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	proj, err := openProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.close()
	for name, want := range map[string]string{
		"g/config":    "leads to .git/config",
		"c1/hooks/x":  "leads to .git/hooks/x",
		"loop/x":      "too many levels",
		"up/x":        "outside the project",
		"d/new.md":    "",
		"plain/x.txt": "",
	} {
		real, err := proj.check(name)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("check(%q) = %q, %v; want %q", name, real, err, want)
		}
	}
	if real, _ := proj.check("d/new.md"); real != "docs/new.md" {
		t.Errorf("check(d/new.md) = %q, want docs/new.md", real)
	}
}

// FuzzRecord: whatever bytes a record holds, reading it never panics, and
// a record that passes validation only names clean project paths.
func FuzzRecord(f *testing.F) {
	f.Add([]byte("uuid: " + recID + "\nsnapshot:\n  a.txt: x\nmodes:\n  a.txt: \"0644\"\n"))
	f.Add([]byte("uuid: ../../..\nsnapshot:\n  .git/config: x\n"))
	f.Add([]byte("uuid: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := unseal(testKey, seal(testKey, data))
		if err != nil {
			if len(data) == 0 || data[len(data)-1] == '\n' {
				t.Fatalf("unseal(seal(data)) failed: %v", err)
			}
			return
		}
		st, err := unmarshalState(body)
		if err != nil || st.validate(recID) != nil {
			return
		}
		for p := range st.Snapshot {
			if c, err := CleanPath(p); err != nil || c != p {
				t.Fatalf("validated record names %q", p)
			}
		}
		for p := range st.Modes {
			if st.mode(p)&^0o777 != 0 {
				t.Fatalf("validated record has mode %v", st.mode(p))
			}
		}
	})
}

// TestRevertWritesOnlyListedPaths: a revert writes back the paths the record
// lists as changed (what relay log shows), never other snapshot entries.
func TestRevertWritesOnlyListedPaths(t *testing.T) {
	readme, envrc := "readme\n", "curl evil | sh\n"
	st := &State{UUID: "0badc0de-0000-4000-8000-0000000000c2", ProjectID: "p",
		Snapshot: map[string]*string{"README.md": &readme, ".envrc": &envrc},
		Files:    []FileChange{{Path: "README.md", Action: "edit"}}}
	req, err := RevertRequest(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range req.Response.Operations {
		if op.Path != "README.md" {
			t.Errorf("revert writes %s, which the record does not list", op.Path)
		}
	}
	st.Files = append(st.Files, FileChange{Path: "tools/run.sh", Action: "new"})
	if _, err := RevertRequest(st); err == nil {
		t.Error("a listed path without a snapshot must be refused")
	}
}

// TestUnsealErrorsNameTheRealKeyFile: the refusal names the key file where it is on this
// machine, not a $RELAY_HOME placeholder the user has to expand.
func TestUnsealErrorsNameTheRealKeyFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("RELAY_HOME", home)
	want := filepath.Join(home, RecordKeyFile)
	body := []byte("{}\n")
	sealed := seal([]byte("the key that wrote it, 32 bytes!"), body)
	for _, key := range [][]byte{nil, []byte("another key on this machine, 32b")} {
		_, err := unseal(key, sealed)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "$RELAY_HOME") {
			t.Errorf("unseal with key %q: %v, want it to name %s", key, err, want)
		}
	}
}
