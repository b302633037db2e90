package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/testsupport/pgtest"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory"
)

// TestMain lets the crash test re-run this binary as a real daemon process it can kill -9.
func TestMain(m *testing.M) {
	if home := os.Getenv("RELAY_TEST_DAEMON_HOME"); home != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := Run(ctx, RunOptions{Home: home, Port: 0, NoAuth: true, Version: "crash-test", Store: os.Getenv("RELAY_TEST_DAEMON_STORE")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func startDaemonProcess(t *testing.T, home string, store ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RELAY_TEST_DAEMON_HOME="+home)
	if len(store) > 0 {
		cmd.Env = append(cmd.Env, "RELAY_TEST_DAEMON_STORE="+store[0])
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if info, err := relayhome.ReadInfo(home); err == nil && info.PID == cmd.Process.Pid {
			if resp, err := http.Get(info.URL + "/health"); err == nil {
				resp.Body.Close()
				return cmd, info.URL
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatal("daemon did not start")
	return nil, ""
}

// TestCrashKeepsAcknowledgedWrites kills the daemon with SIGKILL under write load; after a
// restart every acknowledged patch and artifact is there and the database is intact.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	home := t.TempDir()
	cmd, url := startDaemonProcess(t, home)
	hc := &http.Client{Timeout: 10 * time.Second}
	post := func(path, ctype string, body []byte, hdr ...string) (int, []byte, error) {
		req, _ := http.NewRequest("POST", url+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	const writers = 4
	threads := make([]string, writers)
	for i := range threads {
		code, b, err := post("/threads", "application/json", []byte(`{}`))
		if err != nil || code != 201 {
			t.Fatalf("create thread: %d %v", code, err)
		}
		var th memory.Thread
		json.Unmarshal(b, &th)
		threads[i] = th.ID
	}
	var mu sync.Mutex
	ackedFacts := map[string][]string{} // thread → fact ids acknowledged
	ackedArts := map[string]string{}    // ref → sha256
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tid := threads[w]
			for v := 1; ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("f%d", v)
				code, _, err := post("/threads/"+tid+"/state/patch", "application/json",
					[]byte(`[{"op":"add","path":"/facts/-","value":{"id":"`+id+`","key":"k","value":1}}]`), "If-Match", fmt.Sprintf("v%d", v))
				if err != nil {
					return // the daemon died: this write was never acknowledged
				}
				if code != 200 {
					t.Errorf("patch %s: %d", id, code)
					return
				}
				mu.Lock()
				ackedFacts[tid] = append(ackedFacts[tid], id)
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b := make([]byte, 16<<10)
			rand.Read(b)
			code, body, err := post("/threads/"+threads[0]+"/artifacts?type=binary", "application/octet-stream", b)
			if err != nil {
				return
			}
			var a memory.Artifact
			if code != 201 || json.Unmarshal(body, &a) != nil {
				t.Errorf("put: %d %s", code, body)
				return
			}
			sum := sha256.Sum256(b)
			mu.Lock()
			ackedArts[a.Ref] = hex.EncodeToString(sum[:])
			mu.Unlock()
		}
	}()
	time.Sleep(2500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	close(stop)
	wg.Wait()

	cmd, url = startDaemonProcess(t, home)
	total := 0
	for _, tid := range threads {
		resp, err := hc.Get(url + "/threads/" + tid + "/state")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Version int                   `json:"version"`
			Facts   []struct{ ID string } `json:"facts"`
		}
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		have := map[string]int{}
		for _, f := range doc.Facts {
			have[f.ID]++
		}
		for _, id := range ackedFacts[tid] {
			if have[id] != 1 {
				t.Errorf("thread %s: acknowledged fact %s present %d times after the crash", tid, id, have[id])
			}
		}
		// At most the one in-flight patch may have committed without its ack arriving.
		if n := len(ackedFacts[tid]); len(doc.Facts) < n || len(doc.Facts) > n+1 || doc.Version != len(doc.Facts)+1 {
			t.Errorf("thread %s: %d facts at v%d, %d acknowledged", tid, len(doc.Facts), doc.Version, n)
		}
		total += len(ackedFacts[tid])
	}
	for ref, sum := range ackedArts {
		resp, err := hc.Get(url + "/threads/" + threads[0] + "/artifacts/" + ref + "?raw=1")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := sha256.Sum256(b)
		if resp.StatusCode != 200 || hex.EncodeToString(got[:]) != sum {
			t.Errorf("acknowledged artifact %s lost or changed (%d)", ref, resp.StatusCode)
		}
	}
	if total == 0 || len(ackedArts) == 0 {
		t.Fatalf("no write was acknowledged before the kill (%d patches, %d artifacts)", total, len(ackedArts))
	}
	t.Logf("after kill -9: %d acknowledged patches and %d artifacts all present", total, len(ackedArts))
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	st, err := sqlite.OpenSQLite(home, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home + "/" + relayhome.InfoFile); !os.IsNotExist(err) {
		t.Errorf("daemon.json left after a graceful stop: %v", err)
	}
}
