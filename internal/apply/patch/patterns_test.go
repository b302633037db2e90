package patch

import (
	"testing"
)

// Each test here is named after a pattern seen in real LLM answers that an
// engine got wrong; the history corpus holds the cases they came from.

func TestPatternSearchEqualsReplaceIsNoOp(t *testing.T) {
	orig := "a\nb\nc\n"
	body := "<<<<<<< SEARCH\na\n=======\na\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n=======\nC\n>>>>>>> REPLACE\n"
	res, err := Apply(orig, true, MultiSearchReplace, body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "a\nb\nC\n" {
		t.Fatalf("content %q", res.Content)
	}
	if len(res.Blocks) != 2 || res.Blocks[0].Status != "no-op" || res.Blocks[1].Status != "applied" {
		t.Fatalf("blocks %+v: want block 1 no-op, block 2 applied", res.Blocks)
	}
	// Only no-ops: the file is unchanged and every block says so.
	res, err = Apply(orig, true, MultiSearchReplace, "<<<<<<< SEARCH\nb\n=======\nb\n>>>>>>> REPLACE\n", Options{})
	if err != nil || res.Content != orig || !AllNoOp(res.Blocks) {
		t.Fatalf("all no-op: %+v, %v", res, err)
	}
}
