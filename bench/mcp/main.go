// Command mcp measures the overhead of one relay MCP tool call: the official
// Go SDK client drives the real `relay mcp` binary over stdio (which talks to
// a real daemon it starts itself) and calls read op=header N times; the
// same header is then read straight from the daemon over HTTP, N times, so
// the difference is what MCP (JSON-RPC framing, the tool layer, one more
// process hop) adds.
//
//	go run ./bench/mcp [-n 1000] [-relay path/to/relay]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/relaydev/relay/bench/internal/build"
	"github.com/relaydev/relay/bench/internal/proc"
)

func main() {
	n := flag.Int("n", 1000, "tool calls to time")
	relay := flag.String("relay", "", "relay binary (default: go build ./cmd/relay into a temp dir)")
	notes := flag.Int("search-notes", 0, "instead: put this many ~2 KB notes through write_memory op=put, then time -n read op=search calls")
	flag.BoolVar(&passThread, "thread", false, "with -search-notes: pass the project's thread id as thread on every search, as an agent that names its thread does")
	flag.Parse()
	if *notes > 0 {
		searchNotes = *notes
	}
	if err := run(*n, *relay); err != nil {
		fmt.Fprintln(os.Stderr, "bench/mcp:", err)
		os.Exit(1)
	}
}

func run(n int, relay string) error {
	work, err := os.MkdirTemp("", "relay-mcp-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if relay == "" {
		relay = filepath.Join(work, "relay")
		if err := build.Relay("", relay); err != nil {
			return err
		}
	}
	home := filepath.Join(work, "home")
	project := filepath.Join(work, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home, "RELAY_HOME="+filepath.Join(home, ".relay"))
	defer func() {
		down := exec.Command(relay, "down")
		down.Env = env
		_ = down.Run()
	}()

	cmd := exec.Command(relay, "mcp")
	cmd.Dir, cmd.Env, cmd.Stderr = project, env, os.Stderr
	ctx := context.Background()
	t0 := time.Now()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	header := &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"op": "header"}}
	// the first call starts the daemon and makes the project's thread
	res, err := cs.CallTool(ctx, header)
	if err != nil || res.IsError {
		return fmt.Errorf("first call: %v %v", err, res)
	}
	fmt.Printf("session start + first call (daemon started, thread made): %s\n", time.Since(t0).Round(time.Millisecond))
	if searchNotes > 0 {
		return timeSearches(ctx, cs, n, home, project, cmd.Process.Pid)
	}
	// a realistic header: a few facts and steps
	patch := []any{
		map[string]any{"op": "add", "path": "/facts", "value": []any{
			map[string]any{"id": "f1", "key": "goal", "value": "make relay mcp fast"},
			map[string]any{"id": "f2", "key": "constraint", "value": "2,500 token tool budget"}}},
		map[string]any{"op": "add", "path": "/plan", "value": []any{map[string]any{"id": "p1", "step": "measure p50/p99", "status": "pending"}}},
	}
	if r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_memory", Arguments: map[string]any{"op": "patch", "patch": patch}}); err != nil || r.IsError {
		return fmt.Errorf("patch: %v %v", err, text(r))
	}
	for i := 0; i < 50; i++ { // warm up
		if _, err := cs.CallTool(ctx, header); err != nil {
			return err
		}
	}
	var size int
	mcpTimes := make([]time.Duration, n)
	for i := range mcpTimes {
		s := time.Now()
		r, err := cs.CallTool(ctx, header)
		mcpTimes[i] = time.Since(s)
		if err != nil || r.IsError {
			return fmt.Errorf("call %d: %v %s", i, err, text(r))
		}
		size = len(text(r))
	}

	// the same header straight from the daemon
	var info struct {
		URL string `json:"url"`
	}
	b, err := os.ReadFile(filepath.Join(home, ".relay", "daemon.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return err
	}
	tb, err := os.ReadFile(filepath.Join(project, ".relaycode", "thread"))
	if err != nil {
		return err
	}
	url := info.URL + "/threads/" + strings.TrimSpace(string(tb)) + "/state/header"
	hc := &http.Client{}
	get := func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	for i := 0; i < 50; i++ {
		if err := get(); err != nil {
			return err
		}
	}
	httpTimes := make([]time.Duration, n)
	for i := range httpTimes {
		s := time.Now()
		if err := get(); err != nil {
			return err
		}
		httpTimes[i] = time.Since(s)
	}
	mp50, mp99 := pct(mcpTimes, 50), pct(mcpTimes, 99)
	hp50, hp99 := pct(httpTimes, 50), pct(httpTimes, 99)
	fmt.Printf("read op=header over MCP stdio, %d calls (%d-byte result): p50 %s  p99 %s\n", n, size, us(mp50), us(mp99))
	fmt.Printf("the same header over HTTP from the daemon, %d calls:          p50 %s  p99 %s\n", n, us(hp50), us(hp99))
	fmt.Printf("MCP overhead per call: p50 +%s  p99 +%s\n", us(mp50-hp50), us(mp99-hp99))
	return nil
}

// searchNotes > 0 times read op=search over that many notes instead of the header;
// passThread names the thread on each search.
var (
	searchNotes int
	passThread  bool
)

// daemonRequests counts the requests in the daemon's log: with RELAY_LOG_LEVEL=debug it
// logs every one, a count that load on the machine does not change.
func daemonRequests(home string) int {
	b, _ := os.ReadFile(filepath.Join(home, ".relay", "daemon.log"))
	return strings.Count(string(b), " msg=request ")
}

// timeSearches puts searchNotes notes of ~2 KB (distinct markdown-like text) through the
// memory tool, then times n searches for words they contain, as an agent calls them.
func timeSearches(ctx context.Context, cs *sdk.ClientSession, n int, home, project string, mcpPID int) error {
	search := map[string]any{"op": "search"}
	if passThread {
		tb, err := os.ReadFile(filepath.Join(project, ".relaycode", "thread"))
		if err != nil {
			return err
		}
		search["thread"] = strings.TrimSpace(string(tb))
	}
	args := func(q string) map[string]any {
		a := maps.Clone(search)
		a["query"] = q
		return a
	}
	topics := []string{"retry policy", "backoff", "database migration", "cache eviction", "token budget", "flaky test", "release notes", "rate limit"}
	for i := range searchNotes {
		var b strings.Builder
		fmt.Fprintf(&b, "# note %d: %s\n\n", i, topics[i%len(topics)])
		for b.Len() < 2000 {
			fmt.Fprintf(&b, "- step %d of note%d: checked the %s of service%d, next look at %s; see issue %d.\n",
				b.Len()/90, i, topics[(i+b.Len())%len(topics)], i%37, topics[(i*3+b.Len())%len(topics)], 1000+i)
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_memory", Arguments: map[string]any{"op": "put", "name": fmt.Sprintf("note%d.md", i), "type": "markdown", "content": b.String()}})
		if err != nil || r.IsError {
			return fmt.Errorf("put note %d: %v %s", i, err, text(r))
		}
	}
	queries := []string{"retry", "backoff service3", "\"rate limit\"", "migration", "flaky", "eviction note7", "budget", "zqxvmiss"}
	for i := 0; i < 20; i++ { // warm up (the first search also waits for the index)
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: args(queries[i%len(queries)])}); err != nil {
			return err
		}
	}
	times := make([]time.Duration, n)
	before := daemonRequests(home)
	daemonPID := daemonPID(home)
	daemonCPU, mcpCPU := proc.CPU(daemonPID), proc.CPU(mcpPID)
	for i := range times {
		q := fmt.Sprintf("%s note%d", queries[i%len(queries)], i%searchNotes) // distinct: no cache hit
		s := time.Now()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: args(q)})
		times[i] = time.Since(s)
		if err != nil || r.IsError {
			return fmt.Errorf("search %d: %v %s", i, err, text(r))
		}
	}
	fmt.Printf("read op=search over MCP stdio at %d notes, %d searches (thread passed: %v): p50 %s  p99 %s\n", searchNotes, n, passThread, us(pct(times, 50)), us(pct(times, 99)))
	if d, m := proc.CPU(daemonPID)-daemonCPU, proc.CPU(mcpPID)-mcpCPU; daemonCPU > 0 && mcpCPU > 0 {
		// CPU per search compares builds on a busy machine, where wall-clock times do not
		fmt.Printf("CPU per search: daemon %s, relay mcp %s\n", us(d/time.Duration(n)), us(m/time.Duration(n)))
		if m > 0 {
			// relay mcp does the same work for every search, so its CPU measures the machine's
			// speed at the moment: where its code is the same in two builds, the ratio
			// compares their daemons on a machine whose speed drifts between runs
			fmt.Printf("daemon CPU / relay mcp CPU: %.2f\n", float64(d)/float64(m))
		}
	}
	if reqs := daemonRequests(home) - before; reqs > 0 {
		fmt.Printf("daemon requests per search: %.2f\n", float64(reqs)/float64(n))
	}
	return nil
}

// daemonPID is the pid daemon.json names (0 when unknown).
func daemonPID(home string) int {
	var info struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(home, ".relay", "daemon.json"))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return 0
	}
	return info.PID
}

func text(r *sdk.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }
