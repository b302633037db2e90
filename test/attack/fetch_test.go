package attack

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A URL relay is asked to fetch (http.fetch, through `relay cap invoke`) must
// not reach an internal service, however the address is spelled: the guard
// checks the address actually dialled, including every IPv6 form that embeds
// an IPv4 address. A local server stands in for the internal service and
// counts every request that reaches it.
func TestFetchInternalForms(t *testing.T) {
	var hits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "internal secret")
	}))
	defer internal.Close()
	_, port, _ := net.SplitHostPort(internal.Listener.Addr().String())
	// a public-looking page that redirects inward
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://[::ffff:127.0.0.1]:"+port+"/", http.StatusFound)
	}))
	defer redirector.Close()

	s := newSandbox(t)
	startDaemon(t, s) // no RELAY_FETCH_ALLOW: nothing internal is allowed
	tid := strings.TrimSpace(s.Run("", "thread", "new", "--name", "fetch").Stdout)
	if tid == "" {
		t.Fatal("no thread")
	}
	hosts := []string{
		"127.0.0.1", "localhost", "127.0.0.2", "127.1", "0177.0.0.1", "0x7f.0.0.1", "2130706433", "0.0.0.0",
		"[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]",
		"[::127.0.0.1]", "[::7f00:1]", "[::ffff:0:127.0.0.1]", "[64:ff9b::127.0.0.1]", "[64:ff9b::7f00:1]",
		"[2002:7f00:1::]", "[2002:7f00:1::1]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[2001:0:7f00:1::f7f7:f7f7]",
		"[::1%25lo]", "127.0.0.1.nip.io", "localhost.", "LOCALHOST",
	}
	urls := []string{redirector.URL + "/"}
	for _, h := range hosts {
		urls = append(urls, "http://"+h+":"+port+"/")
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"url": u})
			r := s.Run("", "cap", "invoke", "http.fetch", "--thread", tid, "--args", string(args), "--no-cache")
			if r.Code == 0 {
				t.Fatalf("fetched %s: %s", u, r)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the internal server was reached %d times", n)
	}
	// and nothing was stored
	var list struct {
		Artifacts []any `json:"artifacts"`
	}
	r := s.Run("", "artifact", "ls", "--thread", tid, "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Artifacts) != 0 {
		t.Fatalf("artifacts after refused fetches: %s (%v)", r.Stdout, err)
	}
}
