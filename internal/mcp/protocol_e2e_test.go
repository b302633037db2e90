package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawSession pipes lines into one `relay mcp` and returns the replies by id,
// after relay exits at the end of its stdin.
func (w *world) rawSession(t *testing.T, lines ...string) map[float64]map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.relay, "mcp")
	cmd.Dir, cmd.Env = w.project, w.env
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("relay mcp: %v\n%s", err, errb.String())
	}
	replies := map[float64]map[string]any{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("relay mcp wrote a line that is not JSON: %q", sc.Text())
		}
		id, _ := m["id"].(float64)
		replies[id] = m
	}
	return replies
}

func initLine(version string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
}

const (
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	listLine        = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// The first-use case: printf '%s\n' "$INIT" "$INITIALIZED" "$LIST" | relay mcp
// used to print nothing; 20 runs, 2 replies each.
func TestRelayMCPAnswersEverythingBeforeEOF(t *testing.T) {
	w := newWorld(t)
	for i := range 20 {
		replies := w.rawSession(t, initLine("2025-06-18"), initializedLine, listLine)
		if len(replies) != 2 || replies[1]["result"] == nil || replies[2]["result"] == nil {
			t.Fatalf("run %d: want 2 replies (initialize, tools/list), got %v", i+1, replies)
		}
	}
}

// Every protocol version the pinned SDK speaks through initialize is echoed
// back (2025-06-18: what Codex and Gemini CLI send; 2025-11-25: Claude Code,
// Qwen Code), and the newest, which starts with server/discover instead, is
// what the SDK's own client gets.
func TestProtocolVersions(t *testing.T) {
	w := newWorld(t)
	versions := sdk.SupportedProtocolVersions()
	newest := versions[0]
	for _, v := range versions {
		if v == newest {
			continue // no initialize in the newest version: see below
		}
		t.Run(v, func(t *testing.T) {
			replies := w.rawSession(t, initLine(v), initializedLine, listLine)
			res, _ := replies[1]["result"].(map[string]any)
			if res["protocolVersion"] != v {
				t.Fatalf("initialize %s answered %v", v, replies[1])
			}
			tools, _ := replies[2]["result"].(map[string]any)["tools"].([]any)
			if len(tools) == 0 {
				t.Fatalf("tools/list after initialize %s: %v", v, replies[2])
			}
		})
	}
	for _, v := range []string{"2025-06-18", newest} {
		t.Run("sdk client "+v, func(t *testing.T) {
			cs := w.connect(t, nil, &sdk.ClientSessionOptions{ProtocolVersion: v})
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			list, err := cs.ListTools(ctx, nil)
			if err != nil || len(list.Tools) == 0 {
				t.Fatalf("tools/list at %s: %v", v, err)
			}
		})
	}
	if !slices.Contains(versions, "2025-06-18") {
		t.Fatalf("the SDK no longer speaks 2025-06-18 (today's Codex and Gemini CLI): %v", versions)
	}
}

// The second first-use case: in a project named demo, thread new --name demo and
// then the first relay mcp call made a second thread named demo. The project thread now
// takes the next free name, and every name finds one thread.
func TestProjectThreadTakesTheNextFreeName(t *testing.T) {
	w := newWorld(t)
	name := filepath.Base(w.project)
	w.run(t, w.relay, "up")
	mine := strings.TrimSpace(w.run(t, w.relay, "thread", "new", "--name", name))
	cs := w.connect(t, nil)
	mustOK(t, cs, "read", map[string]any{"op": "header"})
	project := strings.TrimSpace(readFile(t, w, ".relaycode/thread"))
	if project == mine {
		t.Fatal("relay mcp took the user's thread as the project's")
	}
	var runs struct {
		Threads []struct {
			ID   string `json:"thread_id"`
			Name string `json:"name"`
		} `json:"threads"`
	}
	if err := json.Unmarshal([]byte(w.run(t, w.relay, "runs", "--json")), &runs); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, th := range runs.Threads {
		names[th.ID] = th.Name
	}
	if names[mine] != name || names[project] != name+" (2)" {
		t.Fatalf("threads %v: want %s named %q and the project's %s named %q", names, mine, name, project, name+" (2)")
	}
	w.run(t, w.relay, "stats", name) // one thread per name: no "matches 2 threads"
}
