package statedoc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderWithArtifacts(t *testing.T) {
	st, err := Parse(NewAt("3f1c2a9e-6b7d-4e5f-8a9b-0c1d2e3f4a5b", time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	st, err = st.Patch([]byte(`[{"op":"add","path":"/artifacts/-","value":{"ref":"r-listed","type":"markdown","name":"plan.md"}}]`), 1, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	var recent []ArtifactRef
	for i := 0; i < 12; i++ {
		recent = append(recent, ArtifactRef{Ref: fmt.Sprintf("r%02d", i), Type: "text", Name: fmt.Sprintf("n%d.txt", i)})
	}
	recent[11] = ArtifactRef{Ref: "r-listed", Type: "markdown"} // stored and listed: once
	var got struct {
		Refs   []string       `json:"refs"`
		Totals map[string]int `json:"n"`
	}
	b, _, err := st.HeaderWithArtifacts(Metrics{}, recent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i < 11; i++ {
		want = append(want, fmt.Sprintf("r%02d n%d.txt", i, i))
	}
	if d := cmp.Diff(want, got.Refs); d != "" {
		t.Errorf("artifact_refs (-want +got):\n%s", d)
	}
	if got.Totals["refs"] != 12 {
		t.Errorf("n.refs = %d, want 12 (1 listed + 11 stored only)", got.Totals["refs"])
	}
	short, _, err := st.HeaderFor(Metrics{}, recent, func(ref string) string { return "s" + ref })
	if err != nil || !json.Valid(short) || !strings.Contains(string(short), `"sr01 n1.txt"`) {
		t.Errorf("named refs: %s, %v", short, err)
	}
	// A stored artifact the document lists under the other form of its ref is listed once.
	listed := build(t, map[string]string{"artifacts": `[{"ref":"sr10","name":"n10.txt"}]`})
	sl, err := Parse(listed)
	if err != nil {
		t.Fatal(err)
	}
	once, _, err := sl.HeaderFor(Metrics{}, recent[9:11], func(ref string) string {
		if strings.HasPrefix(ref, "s") {
			return ref
		}
		return "s" + ref
	})
	if err != nil || strings.Count(string(once), "n10.txt") != 1 || !strings.Contains(string(once), `"sr09 n9.txt"`) {
		t.Errorf("an artifact listed by its other ref form: %s, %v", once, err)
	}
	plain, _, _ := st.Header(Metrics{})
	none, _, _ := st.HeaderWithArtifacts(Metrics{}, nil)
	if string(plain) != string(none) {
		t.Errorf("no stored artifacts: %s, want the plain header %s", none, plain)
	}
}
