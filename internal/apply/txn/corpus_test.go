package txn

import (
	"context"
	"os"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"

	"github.com/relaydev/relay/internal/apply/patch"
)

// TestRelaycodeE2ECorpus applies every nocapro/relaycode end-to-end response with -y to its
// initial tree through the real parser and engine, and compares the result; a refused
// response leaves no pending record either.
func TestRelaycodeE2ECorpus(t *testing.T) {
	corpus.RunE2E(t, func(t *testing.T, work string, c corpus.E2ECase) error {
		text, err := os.ReadFile(c.Response())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := patch.Parse(string(text))
		if err != nil {
			return err
		}
		e := &Engine{Dir: work, Opts: Options{ProjectID: "test-project", ApprovalMode: "auto"}}
		_, err = e.Run(context.Background(), Request{Response: resp, Yes: true})
		if len(pendingFiles(t, work)) != 0 {
			t.Errorf("pending record left")
		}
		return err
	})
}
