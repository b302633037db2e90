package txn

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/relaydev/relay/internal/apply/patch"
)

// legacyMarshal writes a record as relay did before it quoted texts that start with white
// space: yaml.v3 straight, two-space indent.
func legacyMarshal(t testing.TB, s *State) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// legacyState holds text in every place a record keeps file contents and messages.
func legacyState(text string) *State {
	before := text
	return &State{UUID: testUUID, ProjectID: "p", GitCommitMsg: text, PromptSummary: text,
		Reasoning:  []string{"first", text},
		Operations: []patch.Operation{{Kind: patch.OpWrite, Path: "Makefile", Content: text}, {Kind: patch.OpWrite, Path: "b.txt", Content: "plain\n"}},
		Snapshot:   map[string]*string{"Makefile": &before, "b.txt": nil}}
}

// sameTexts fails t unless got holds text wherever legacyState put it.
func sameTexts(t *testing.T, got *State, text string) {
	t.Helper()
	if got.GitCommitMsg != text || got.PromptSummary != text || len(got.Reasoning) != 2 || got.Reasoning[1] != text ||
		len(got.Operations) != 2 || got.Operations[0].Content != text || got.Operations[1].Content != "plain\n" ||
		got.Snapshot["Makefile"] == nil || *got.Snapshot["Makefile"] != text || got.Snapshot["b.txt"] != nil {
		t.Fatalf("the record read back differs from the one written, for text %q: %+v", text, got)
	}
}

func TestReadLegacyRecordWithTabTexts(t *testing.T) {
	for _, text := range []string{
		"\tgo build ./...\n",
		"\tall:\n\t\tgo build\nclean:\n\trm -f bin\n",
		"\tx\nkey: |\n\ty: |\n\t\tz", // lines inside a block that look like block headers stay text
		"\tlast line\n\tno final newline",
	} {
		b := legacyMarshal(t, legacyState(text))
		var plain State
		if err := yaml.Unmarshal(b, &plain); err == nil {
			t.Fatalf("yaml.v3 reads the legacy record of %q itself; this test needs one it cannot read", text)
		}
		got, err := unmarshalState(b)
		if err != nil {
			t.Fatalf("legacy record of %q: %v\n%s", text, err, b)
		}
		sameTexts(t, got, text)
	}
	// and through the file, as relay log and relay revert read it
	dir := t.TempDir()
	name := filepath.Join(dir, testUUID+committedSuffix)
	if err := os.WriteFile(name, legacyMarshal(t, legacyState("\tinstall:\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readState(name)
	if err != nil {
		t.Fatal(err)
	}
	sameTexts(t, got, "\tinstall:\n")
}

// A line the scan would mend that the parser does not confirm as a literal block's header
// (here inside a double-quoted text) makes the mend refuse, not change the text.
func TestLegacyMendRefusesWhatIsNotAHeader(t *testing.T) {
	doc := []byte("uuid: " + testUUID + "\ngitCommitMsg: \"x\n  b: |\n     \ty\"\n")
	if fixed, changed := indentTabBlocks(doc); len(changed) != 1 || !bytes.Contains(fixed, []byte("b: |3")) {
		t.Fatalf("the scan should take line 2 for a header: changed %v\n%s", changed, fixed)
	}
	if s, err := unmarshalLegacy(doc); err == nil {
		t.Fatalf("mended a line inside a quoted text: commit message %q", s.GitCommitMsg)
	}
	if _, err := unmarshalLegacy([]byte("uuid: x\nmsg: |\n  plain\n")); err != errNoLegacyMend {
		t.Fatalf("a record with no tab block: err = %v, want errNoLegacyMend", err)
	}
}

// TestLegacyMendReadsEveryUnreadableRecord: over texts made of tabs, spaces, line breaks,
// invalid UTF-8 and YAML's block indicators, every legacy record yaml.v3 cannot read holds
// a text starting with a tab, and the mend reads each to exactly its texts.
func TestLegacyMendReadsEveryUnreadableRecord(t *testing.T) {
	parts := []string{"\t", " ", "\n", "a", ":", "|", "-", ">", "#", "b: |", "\n\t", "x", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	unreadable := 0
	for range 3000 {
		var text strings.Builder
		for range 1 + rng.IntN(12) {
			text.WriteString(parts[rng.IntN(len(parts))])
		}
		b := legacyMarshal(t, legacyState(text.String()))
		if yaml.Unmarshal(b, new(State)) == nil {
			continue
		}
		unreadable++
		if !strings.HasPrefix(text.String(), "\t") {
			t.Errorf("a legacy record yaml.v3 cannot read, for a text not starting with a tab: %q", text.String())
			continue
		}
		got, err := unmarshalLegacy(b)
		if err != nil {
			t.Errorf("legacy record of %q not mended: %v", text.String(), err)
			continue
		}
		sameTexts(t, got, text.String())
	}
	if unreadable == 0 {
		t.Fatal("no generated record was unreadable: the test proves nothing")
	}
	t.Logf("%d of 3000 legacy records unreadable by yaml.v3, all mended", unreadable)
}

// FuzzLegacyRecord: a legacy record is read back with the texts it was written with, or
// not at all; never with other texts.
func FuzzLegacyRecord(f *testing.F) {
	for _, s := range []string{"\tfoo\n", "\tx\nkey: |\n\tz\n", "plain\n", " \tx", "\t\n\t\n", "\tx\n  - |\n\ty\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		b := legacyMarshal(t, legacyState(text))
		if yaml.Unmarshal(b, new(State)) == nil {
			return // yaml.v3 reads it: not the mend's case
		}
		got, err := unmarshalLegacy(b)
		if err != nil {
			return // refused: the record stays unreadable, as before
		}
		sameTexts(t, got, text)
	})
}
