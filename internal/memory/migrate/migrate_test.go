package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/a2a"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/migrate"
	"github.com/relaydev/relay/internal/memory/postgres"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/testsupport/pgtest"
	"github.com/relaydev/relay/internal/testsupport/s3test"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fill writes threads with many versions (crossing snapshots), artifacts, events and calls.
func fill(t *testing.T, st memory.Store) []memory.Thread {
	ctx := context.Background()
	var out []memory.Thread
	for i := range 3 {
		th, err := st.CreateThread(ctx, memory.CreateThreadParams{Name: fmt.Sprintf("thread %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for v := 2; v <= 70+i; v++ {
			p := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"k","value":%d}}]`, v, v)
			if _, err := st.PatchState(ctx, th.ID, []byte(p), v-1, "agent"); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 4 {
			body := bytes.Repeat([]byte(fmt.Sprintf("artifact %d of thread %d\n", j, i)), 100*(j+1))
			if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: fmt.Sprintf("a%d.md", j), Content: body, CreatedBy: "agent"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.PutArtifact(ctx, th.ID, memory.PutArtifactParams{Name: "bin", Content: []byte{0, 1, 2, 255}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendEvent(ctx, th.ID, "note", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
		if err := st.AddMetrics(ctx, th.ID, memory.Metrics{CacheHits: int64(i), TokensAvoided: 100}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordCall(ctx, memory.CallRecord{Call: memory.CapabilityCall{ThreadID: th.ID, Capability: "text.summarize", Args: []byte(`{}`), At: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		th, _ = st.GetThread(ctx, th.ID)
		out = append(out, th)
	}
	return out
}

func TestSQLiteToPostgresAndBack(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	bucket, err := blob.Open(ctx, srv.Bucket(t, "migrate", "relay"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	threads := fill(t, src)
	// An agent-to-agent request answered before the migration, with an idempotency key.
	runs := 0
	handler := func(ctx context.Context, e *a2a.Envelope) (json.RawMessage, error) {
		runs++
		return json.RawMessage(fmt.Sprintf(`{"run":%d}`, runs)), nil
	}
	req, err := a2a.NewRequest(threads[0].ID, "agent-b", "text.summarize", map[string]string{"text": "hi"}, "retry-me", 0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := a2a.NewProcessor(src, a2a.Limits{}, handler).ProcessEnvelope(ctx, req)
	if err != nil || first.Hops != 1 {
		t.Fatalf("a2a before the migration: %+v %v", first, err)
	}
	url := pgtest.New(t)
	dst, err := postgres.Open(ctx, url, postgres.Options{Blobs: bucket})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()

	rep, err := migrate.Copy(ctx, src, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Threads != 3 || rep.Copied != 3 || rep.Artifacts != 15 || rep.Versions != 70+71+72 {
		t.Fatalf("report %+v", rep)
	}
	// Every version of every thread reads the same through both stores.
	for _, th := range threads {
		for v := 1; v <= th.Version; v++ {
			a, err1 := src.State(ctx, th.ID, v)
			b, err2 := dst.State(ctx, th.ID, v)
			if err1 != nil || err2 != nil || !bytes.Equal(a.Doc, b.Doc) {
				t.Fatalf("thread %s v%d differs (%v, %v)", th.ID, v, err1, err2)
			}
		}
		got, _ := dst.GetThread(ctx, th.ID)
		if got.Version != th.Version || got.ArtifactCount != th.ArtifactCount || got.EventCount != th.EventCount || got.Metrics != th.Metrics || !got.UpdatedAt.Equal(th.UpdatedAt.Time) {
			t.Fatalf("thread row %+v, want %+v", got, th)
		}
		if hits, err := dst.Search(ctx, th.ID, memory.SearchQuery{Query: "artifact"}); err != nil || len(hits) != 4 {
			t.Fatalf("search after migrate: %d hits, %v", len(hits), err)
		}
	}

	// The hop count and the idempotency key came along: the retry of the request through
	// the new store gets the first answer, without running again, and counts no hop.
	if rep.Hops != 1 || rep.Keys != 1 {
		t.Fatalf("report: %d hops, %d keys; want 1 and 1", rep.Hops, rep.Keys)
	}
	retry, err := a2a.NewProcessor(dst, a2a.Limits{}, handler).ProcessEnvelope(ctx, req)
	if err != nil || !retry.Replayed || runs != 1 || !bytes.Equal(retry.Response.Payload, first.Response.Payload) {
		t.Fatalf("a2a retry after the migration: %+v %v (ran %d times)", retry, err, runs)
	}
	if hops, err := dst.Hops(ctx, threads[0].ID); err != nil || hops != 1 {
		t.Fatalf("hops after the migration: %d %v", hops, err)
	}

	// Resumable: a second run copies nothing and verifies everything.
	again, err := migrate.Copy(ctx, src, dst, nil)
	if err != nil || again.Copied != 0 || again.Skipped != 3 || again.Digest != rep.Digest {
		t.Fatalf("second run: %+v %v", again, err)
	}

	// And back to a fresh SQLite store: the same digest.
	back, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	rt, err := migrate.Copy(ctx, dst, back, nil)
	if err != nil || rt.Digest != rep.Digest || rt.Copied != 3 {
		t.Fatalf("round trip back: %+v %v (digest %s, want %s)", rt, err, rt.Digest, rep.Digest)
	}

	// A thread changed in the destination is caught, not skipped.
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `UPDATE state_versions SET author = 'someone else' WHERE thread_id = $1 AND version = 5`, threads[1].ID); err != nil {
		t.Fatal(err)
	}
	var me *migrate.MismatchError
	if _, err := migrate.Copy(ctx, src, dst, nil); !errors.As(err, &me) || me.ThreadID != threads[1].ID {
		t.Fatalf("tampered destination: %v", err)
	}
}
