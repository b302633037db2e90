package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ToolCall makes the model call one MCP tool: the first turn whose request
// contains Trigger and offers the tool gets the call; a turn that carries the
// tool's result is recorded (Results) and answered with Answer, so the CLI
// ends its session. Each CLI names the tool its own way (codex: function Name
// in namespace mcp__<Server>; claude and qwen: mcp__<Server>__<Name>; gemini:
// mcp_<Server>_<Name>).
type ToolCall struct {
	Server, Name string
	Args         map[string]any
	Trigger      string
}

// Results are the tool results the CLIs sent back, as text.
func (f *Server) Results() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.results...)
}

// Calls is how many tool calls the server made.
func (f *Server) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *Server) record(v any) {
	var b strings.Builder
	CollectStrings(v, &b)
	f.mu.Lock()
	f.results = append(f.results, b.String())
	f.mu.Unlock()
}

// toolTurn answers the turn when the tool is involved and reports whether it did.
func (f *Server) toolTurn(w http.ResponseWriter, path string, raw []byte, body map[string]any, model string, stream bool) bool {
	t := f.Tool
	full := "mcp__" + t.Server + "__" + t.Name
	args, _ := json.Marshal(t.Args)
	switch {
	case strings.HasSuffix(path, "/responses"):
		if out := responsesResult(body); out != nil {
			f.record(out)
			return false // the canned answer ends the turn
		}
		if !strings.Contains(string(raw), t.Trigger) {
			return false
		}
		ns, name := codexTool(body, t.Server, t.Name)
		if name == "" {
			return false
		}
		f.count()
		item := map[string]any{"type": "function_call", "id": "fc_mcp", "call_id": "call_mcp", "name": name, "arguments": string(args), "status": "completed"}
		if ns != "" {
			item["namespace"] = ns
		}
		s := newSSE(w)
		s.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_mcp", "status": "in_progress", "output": []any{}}})
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		s.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
		s.send("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": "fc_mcp", "output_index": 0, "delta": string(args)})
		s.send("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": "fc_mcp", "output_index": 0, "arguments": string(args)})
		s.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		s.send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_mcp", "status": "completed",
			"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}})
		return true
	case strings.HasSuffix(path, "/messages"):
		if out := anthropicResult(body); out != nil {
			f.record(out)
			return false
		}
		if !stream || !strings.Contains(string(raw), t.Trigger) || !declares(body["tools"], full) {
			return false
		}
		f.count()
		s := newSSE(w)
		s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mcp", "type": "message", "role": "assistant",
			"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_mcp", "name": full, "input": map[string]any{}}})
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		s.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
		s.send("message_stop", map[string]any{"type": "message_stop"})
		return true
	case strings.Contains(path, "GenerateContent") || strings.Contains(path, ":generateContent"):
		if out := geminiResult(body); out != nil {
			f.record(out)
			return false
		}
		name := "mcp_" + t.Server + "_" + t.Name
		if !strings.Contains(string(raw), t.Trigger) || !declares(body["tools"], name) {
			return false
		}
		f.count()
		chunk := map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"functionCall": map[string]any{"name": name, "args": t.Args}}}}, "finishReason": "STOP", "index": 0}},
			"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}}
		if !stream {
			writeJSON(w, chunk)
			return true
		}
		newSSE(w).send("", chunk)
		return true
	case strings.HasSuffix(path, "/chat/completions"):
		if out := chatResult(body); out != nil {
			f.record(out)
			return false
		}
		// qwen defers MCP tools: the first turn names them only in the prompt,
		// and calling one by its full name runs it
		if !strings.Contains(string(raw), t.Trigger) || !strings.Contains(string(raw), full) || f.Calls() > 0 {
			return false
		}
		f.count()
		base := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{"id": "chatcmpl-mcp", "object": "chat.completion.chunk", "created": 1, "model": model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		}
		s := newSSE(w)
		s.send("", base(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0, "id": "call_mcp", "type": "function",
			"function": map[string]any{"name": full, "arguments": ""}}}}, nil))
		s.send("", base(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args)}}}}, nil))
		s.send("", base(map[string]any{}, "tool_calls"))
		u := map[string]any{"id": "chatcmpl-mcp", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
		s.send("", u)
		fmt.Fprint(w, "data: [DONE]\n\n")
		return true
	}
	return false
}

func (f *Server) count() {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
}

// declares reports whether a request's tool list holds a tool named name.
func declares(tools any, name string) bool {
	found := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if n, _ := x["name"].(string); n == name {
				found = true
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(tools)
	return found
}

// codexTool finds the tool in codex's request: a function inside the
// mcp__<server> namespace, or a flat function with the full name.
func codexTool(body map[string]any, server, name string) (ns, fn string) {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		if m["type"] == "namespace" && m["name"] == "mcp__"+server && declares(m["tools"], name) {
			return "mcp__" + server, name
		}
		if m["name"] == "mcp__"+server+"__"+name {
			return "", "mcp__" + server + "__" + name
		}
	}
	return "", ""
}

func responsesResult(body map[string]any) any {
	in, _ := body["input"].([]any)
	for _, e := range in {
		if m, _ := e.(map[string]any); m["type"] == "function_call_output" && m["call_id"] == "call_mcp" {
			return m["output"]
		}
	}
	return nil
}

func anthropicResult(body map[string]any) any {
	msgs, _ := body["messages"].([]any)
	for _, e := range msgs {
		m, _ := e.(map[string]any)
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			if pm, _ := p.(map[string]any); pm["type"] == "tool_result" && pm["tool_use_id"] == "toolu_mcp" {
				return pm["content"]
			}
		}
	}
	return nil
}

func geminiResult(body map[string]any) any {
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		m, _ := c.(map[string]any)
		parts, _ := m["parts"].([]any)
		for _, p := range parts {
			if pm, _ := p.(map[string]any); pm["functionResponse"] != nil {
				return pm["functionResponse"]
			}
		}
	}
	return nil
}

func chatResult(body map[string]any) any {
	msgs, _ := body["messages"].([]any)
	for _, e := range msgs {
		if m, _ := e.(map[string]any); m["role"] == "tool" && m["tool_call_id"] == "call_mcp" {
			return m["content"]
		}
	}
	return nil
}
