package client

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/memory/statedoc"
)

// TestHeaderSince goes through the real HTTP route: a delta since an older version applies
// onto the header the client holds; an unknown version or a malformed since is handled.
func TestHeaderSince(t *testing.T) {
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(server.New(server.Options{Store: st}).Handler())
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
	ctx := context.Background()
	th, err := c.CreateThread(ctx, "delta")
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := c.Header(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Patch(ctx, th.ID, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"phase","value":"review"}}]`), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.HeaderSince(ctx, th.ID, res.Version-1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Delta == nil || d.Version != res.Version || d.Since != res.Version-1 {
		t.Fatalf("delta = %+v, want a delta to v%d", d, res.Version)
	}
	got, err := statedoc.ApplyHeaderDelta(old, d.Delta)
	if err != nil {
		t.Fatal(err)
	}
	cur, _, _ := c.Header(ctx, th.ID)
	// m (live counters) is not part of a delta
	a, _ := jsonpatch.Decode(statedoc.StripMetrics(got))
	b, _ := jsonpatch.Decode(statedoc.StripMetrics(cur))
	if !jsonpatch.Equal(a, b) {
		t.Fatalf("old header + delta =\n%s\nwant\n%s", got, cur)
	}
	full, err := c.HeaderSince(ctx, th.ID, 99)
	if err != nil || full.Full == nil || full.Delta != nil || full.Version != res.Version {
		t.Fatalf("since v99: %+v, %v; want the full header", full, err)
	}
	if err := c.getJSON(ctx, "/threads/"+th.ID+"/state/header?since=abc", nil); !IsCode(err, "bad_request") {
		t.Fatalf("since=abc: %v, want bad_request", err)
	}
}
