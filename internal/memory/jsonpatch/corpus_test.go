package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"
)

func readFile(dir, name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }

type corpusCase struct {
	Comment  string          `json:"comment"`
	Doc      json.RawMessage `json:"doc"`
	Patch    json.RawMessage `json:"patch"`
	Expected json.RawMessage `json:"expected"`
	Error    *string         `json:"error"`
	Disabled bool            `json:"disabled"`
}

// loadCorpus reads records with encoding/json, which keeps each patch's raw text, so
// duplicate "op" members survive for our own decoder to see.
func loadCorpus(t *testing.T, name string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpus.Dir(t, "corpus/json-patch"), name))
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cases
}

// runCase returns nil when relay's behaviour matches the record.
func runCase(c corpusCase) error {
	got, err := Apply(c.Doc, c.Patch)
	switch {
	case c.Error != nil:
		if err == nil {
			return fmt.Errorf("want error %q, got document %s", *c.Error, got)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			return fmt.Errorf("error is %T, want *jsonpatch.Error: %v", err, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("unexpected error: %v", err)
	case c.Expected != nil:
		want, derr := Decode(c.Expected)
		if derr != nil {
			return fmt.Errorf("bad expected in corpus: %v", derr)
		}
		gotV, derr := Decode(got)
		if derr != nil {
			return fmt.Errorf("output is not valid JSON: %v: %s", derr, got)
		}
		if !Equal(gotV, want) {
			return fmt.Errorf("got %s, want %s", got, c.Expected)
		}
	}
	return nil
}

func TestCorpus(t *testing.T) {
	for _, file := range []string{"tests.json", "spec_tests.json"} {
		t.Run(file, func(t *testing.T) {
			cases := loadCorpus(t, file)
			active, passed := 0, 0
			for i, c := range cases {
				if c.Disabled {
					continue
				}
				active++
				t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
					if err := runCase(c); err != nil {
						t.Errorf("#%d %q: doc %s patch %s: %v", i, c.Comment, c.Doc, c.Patch, err)
						return
					}
					passed++
				})
			}
			t.Logf("%s: %d/%d active cases pass", file, passed, active)
			if active == 0 {
				t.Fatal("no active cases found")
			}
		})
	}
}

// The corpus disables these records because generic decoders cannot tell; relay's own
// decoder can, so it also gets them right: duplicate "op" members are refused (#85, A.13),
// a scalar document can be replaced (#10), and a whole-document test passes (#56).
func TestCorpusDisabled(t *testing.T) {
	n := 0
	for _, file := range []string{"tests.json", "spec_tests.json"} {
		for i, c := range loadCorpus(t, file) {
			if !c.Disabled {
				continue
			}
			n++
			if err := runCase(c); err != nil {
				t.Errorf("%s #%d %q: %v", file, i, c.Comment, err)
			}
		}
	}
	if n != 4 {
		t.Errorf("found %d disabled records, want 4 (3 in tests.json, 1 in spec_tests.json)", n)
	}
}

func TestRFC6901Examples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpus.Dir(t, "corpus/json-patch"), "rfc6901_examples.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Doc json.RawMessage `json:"doc"`
		S5  []struct {
			Pointer  string          `json:"pointer"`
			Expected json.RawMessage `json:"expected"`
		} `json:"section5_json_string_representation"`
		S6 []struct {
			Pointer  string          `json:"pointer"`
			Expected json.RawMessage `json:"expected"`
		} `json:"section6_uri_fragment_representation"`
	}
	if err := json.Unmarshal(data, &ex); err != nil {
		t.Fatal(err)
	}
	doc, err := Decode(ex.Doc)
	if err != nil {
		t.Fatal(err)
	}
	var stdDoc any // the same document as encoding/json decodes it: Get must accept both
	if err := json.Unmarshal(ex.Doc, &stdDoc); err != nil {
		t.Fatal(err)
	}
	check := func(section, ptr string, parse func(string) (Pointer, error), want json.RawMessage) {
		t.Helper()
		p, err := parse(ptr)
		if err != nil {
			t.Errorf("%s %q: parse: %v", section, ptr, err)
			return
		}
		wantV, _ := Decode(want)
		got, err := p.Get(doc)
		if err != nil {
			t.Errorf("%s %q: %v", section, ptr, err)
			return
		}
		if !Equal(got, wantV) {
			g, _ := Encode(got)
			t.Errorf("%s %q: got %s, want %s", section, ptr, g, want)
		}
		if _, err := p.Get(stdDoc); err != nil {
			t.Errorf("%s %q on encoding/json value: %v", section, ptr, err)
		}
	}
	for _, c := range ex.S5 {
		check("§5", c.Pointer, ParsePointer, c.Expected)
	}
	for _, c := range ex.S6 {
		check("§6", c.Pointer, ParseFragment, c.Expected)
	}
	if len(ex.S5) != 12 || len(ex.S6) != 12 {
		t.Errorf("found %d + %d examples, want 12 + 12", len(ex.S5), len(ex.S6))
	}
}
