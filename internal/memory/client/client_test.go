package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/server"
)

// TestStreamResumesAfterDrop: when the daemon ends the stream, Stream reconnects with
// Last-Event-ID and delivers every event exactly once.
func TestStreamResumesAfterDrop(t *testing.T) {
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var current atomic.Pointer[server.Server]
	current.Store(server.New(server.Options{Store: st}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		current.Load().Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: srv.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	th, err := c.CreateThread(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan memory.Event, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Stream(ctx, th.ID, 0, func(e memory.Event) error { got <- e; return nil })
	}()
	if e := <-got; e.Type != memory.EventThreadCreated {
		t.Fatalf("first event %+v", e)
	}
	// Drop every open stream (a daemon restart), then write while the client reconnects.
	old := current.Load()
	current.Store(server.New(server.Options{Store: st}))
	old.Close()
	for i := 0; i < 2; i++ {
		if _, err := st.AppendEvent(ctx, th.ID, "test.event", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		select {
		case e := <-got:
			if e.Type != "test.event" {
				t.Fatalf("event %d after the drop: %+v", i, e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event after the drop")
		}
	}
	select {
	case e := <-got:
		t.Fatalf("duplicate or extra event %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Stream ended with %v", err)
	}
}

func TestFromHomeFindsRecordedPort(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"token":"tok","port":7000}`), 0o600)
	env := func(string) string { return "" }
	c, err := FromHome(home, env)
	if err != nil || c.BaseURL != "http://127.0.0.1:7000" || c.Token != "tok" {
		t.Fatalf("%+v %v", c, err)
	}
	os.WriteFile(filepath.Join(home, relayhome.InfoFile), []byte(`{"pid":1,"url":"http://127.0.0.1:7003","port":7003}`), 0o600)
	if c, _ := FromHome(home, env); c.BaseURL != "http://127.0.0.1:7003" {
		t.Errorf("daemon.json ignored: %s", c.BaseURL)
	}
	c, _ = FromHome(home, func(k string) string {
		return map[string]string{"RELAY_URL": "http://127.0.0.1:9/", "RELAY_TOKEN": "env"}[k]
	})
	if c.BaseURL != "http://127.0.0.1:9" || c.Token != "env" {
		t.Errorf("env overrides ignored: %+v", c)
	}
	c.HTTP = &http.Client{Timeout: time.Second}
	var ue *UnreachableError
	if err := c.Health(context.Background()); !errors.As(err, &ue) {
		t.Errorf("unreachable daemon: %v", err)
	}
	// Without RELAY_URL, a daemon.json that no running daemon backs is never trusted: the
	// port may belong to someone else's daemon by now.
	os.WriteFile(filepath.Join(home, "daemon.lock"), nil, 0o600)
	c, _ = FromHome(home, env)
	if err := c.Health(context.Background()); !errors.As(err, &ue) || !strings.Contains(err.Error(), "no relay daemon is running for") {
		t.Errorf("stale daemon.json trusted: %v", err)
	}
}
