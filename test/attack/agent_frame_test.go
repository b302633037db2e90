package attack

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// The agent door, issue 22 row 13: one MCP message over the 16 MiB frame
// limit (a 30 MB new_string) used to end the whole session, taking the host's
// relay tools away for the rest of its run. It must be an error result the
// model can act on, nothing may be written, and the session goes on.
func TestAgentDoorOversizedFrame(t *testing.T) {
	s := newSandbox(t)
	s.WriteFile("main.go", "package main\n", 0o644)
	if r := s.Run("", "init"); r.Code != 0 {
		t.Fatalf("relay init: %s", r)
	}
	before := Snapshot(t, s.Project)

	huge := strings.Repeat("A", 30<<20)
	bigCall, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": map[string]any{
		"name": "edit_files", "arguments": map[string]any{"op": "edit", "path": "main.go", "old_string": "package main", "new_string": huge}}})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		string(bigCall),
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
	}, "\n") + "\n"
	// stdin ends after the last line: relay answers everything it read, then exits
	r := s.Run(in, "mcp")
	if r.Code != 0 {
		t.Fatalf("relay mcp: %s", r.String()[:min(len(r.String()), 2000)])
	}
	replies := map[float64]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout carries a line that is not JSON-RPC: %.200q", sc.Text())
		}
		if id, ok := m["id"].(float64); ok {
			replies[id] = m
		}
	}
	res, _ := replies[3]["result"].(map[string]any)
	text, _ := json.Marshal(res["content"])
	if res["isError"] != true || !strings.Contains(string(text), "at most 16 MiB") || !strings.Contains(string(text), "Try: ") {
		t.Fatalf("the 30 MB call must be an error result with a next step, got %v", replies[3])
	}
	if replies[4]["result"] == nil {
		t.Fatalf("the session ended at the large message: no reply to the tools/list after it (replies %v)", replies)
	}
	SameTree(t, "project after an oversized edit", before, Snapshot(t, s.Project))
}
