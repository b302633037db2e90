package server

import (
	"context"
	"testing"

	"github.com/relaydev/relay/internal/memory"
)

// TestOneRefPerArtifact: the API names an artifact by its short ref everywhere, and both
// forms of the ref resolve, in its thread and without one (GET /artifacts/{ref}).
func TestOneRefPerArtifact(t *testing.T) {
	srv, st := capServer(t)
	ctx := context.Background()
	th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: "refs"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "a.md", Content: []byte("# a\n")})
	if err != nil {
		t.Fatal(err)
	}
	short := memory.Short(a.Ref)
	for _, path := range []string{"/artifacts/" + a.Ref, "/artifacts/" + short, "/threads/" + th.ID + "/artifacts/" + a.Ref, "/threads/" + th.ID + "/artifacts/" + short} {
		status, body, raw := call(t, srv, "GET", path, nil)
		if status != 200 || body["ref"] != short || body["thread_id"] != th.ID {
			t.Errorf("GET %s = %d %s; want ref %s of thread %s", path, status, raw, short, th.ID)
		}
	}
	status, body, raw := call(t, srv, "GET", "/threads/"+th.ID+"/artifacts?after="+short, nil)
	if status != 200 || len(body["artifacts"].([]any)) != 0 {
		t.Errorf("list after the short ref = %d %s", status, raw)
	}
	if status, _, raw := call(t, srv, "GET", "/artifacts/"+a.Hash[:8], nil); status != 400 {
		t.Errorf("a hash prefix without its thread = %d %s; want 400", status, raw)
	}
}
