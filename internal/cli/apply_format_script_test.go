package cli

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["mcpanswer"] = cmdMCPAnswer
}

// cmdMCPAnswer writes the JSON-RPC lines that make relay mcp apply an answer
// file through the edit_files tool: mcpanswer ANSWER OUT [FORMAT]. Feed OUT to
// `exec relay mcp` as stdin; relay mcp answers every request before exiting.
func cmdMCPAnswer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: mcpanswer ANSWER OUT [FORMAT]")
	}
	answer := ts.ReadFile(args[0])
	call := map[string]any{"op": "answer", "answer": answer}
	if len(args) == 3 {
		call["format"] = args[2]
	}
	msgs := []map[string]any{
		{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "script", "version": "1"}}},
		{"jsonrpc": "2.0", "method": "notifications/initialized"},
		{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "edit_files", "arguments": call}},
	}
	var b strings.Builder
	for _, m := range msgs {
		line, err := json.Marshal(m)
		ts.Check(err)
		b.Write(line)
		b.WriteByte('\n')
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o644))
}
