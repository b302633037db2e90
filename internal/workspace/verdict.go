package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
)

// EventAskVerdict is the event a --verdict answer adds to the thread, with
// the hash of the diff it judged.
const EventAskVerdict = "ask.verdict"

// verdictName names a stored verdict by the diff it judged, so a later ask
// on the same diff finds it by listing, without reading every artifact.
func verdictName(diffSHA, backend string) string {
	return "verdict-" + diffSHA[:16] + "-" + backend + ".json"
}

// PriorVerdicts lists the verdicts stored in the thread on a diff with this
// hash (newest first, as the store lists them).
func PriorVerdicts(ctx context.Context, c *client.Client, thread, diffSHA string) ([]memory.Artifact, error) {
	if len(diffSHA) < 16 {
		return nil, nil
	}
	arts, err := c.ListArtifacts(ctx, thread, memory.TypeJSON, 200)
	if err != nil {
		return nil, err
	}
	prefix := "verdict-" + diffSHA[:16] + "-"
	var out []memory.Artifact
	for _, a := range arts {
		if strings.HasPrefix(a.Name, prefix) {
			out = append(out, a)
		}
	}
	return out, nil
}

// VerdictNote is the envelope section that cites earlier verdicts on the
// same code by ref, instead of pasting them.
func VerdictNote(arts []memory.Artifact) string {
	var b strings.Builder
	b.WriteString("This exact diff was judged before; those verdicts are stored in the thread. Read one with `relay artifact get REF --out -` and say whether it still holds:\n")
	for _, a := range arts {
		fmt.Fprintf(&b, "  %s %s\n", a.Ref, a.Name)
	}
	return strings.TrimSpace(b.String())
}

// RecordVerdict stores a verdict answer as a JSON artifact named by the diff's
// hash, and an ask.verdict event that carries the hash.
func RecordVerdict(ctx context.Context, c *client.Client, thread, diffSHA string, a ask.Answer) (memory.Artifact, error) {
	// the diff's hash and the friend inside the content too: the answer alone is
	// already stored (ask-<friend>.md) and the store would hand back that artifact
	doc, err := json.Marshal(map[string]any{"diff_sha256": diffSHA, "backend": a.Backend, "model": a.Model, "verdict": a.JSON})
	if err != nil {
		return memory.Artifact{}, err
	}
	art, err := c.PutArtifact(ctx, thread, client.PutArtifactParams{
		Name: verdictName(diffSHA, a.Backend), Type: memory.TypeJSON, CreatedBy: askAuthor,
		Content: bytes.NewReader(doc),
	})
	if err != nil {
		return art, err
	}
	data := map[string]any{"backend": a.Backend, "verdict": a.Verdict.Verdict, "diff_sha256": diffSHA,
		"verdict_ref": art.Ref, "findings": len(a.Verdict.Findings)}
	if a.Model != "" {
		data["model"] = a.Model
	}
	_, err = c.AppendEvent(ctx, thread, EventAskVerdict, data)
	return art, err
}
