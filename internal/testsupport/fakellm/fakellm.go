// Package fakellm is a loopback LLM server for tests of the real agent CLIs:
// it speaks the Responses API (codex), Anthropic Messages (claude), Gemini
// generateContent (gemini) and Chat Completions (qwen), answers with canned
// text, a shell-tool call, or a call of an MCP tool, and records every request.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server answers every turn with Answer (or a tool call) and records what it saw.
type Server struct {
	*httptest.Server
	Answer string
	// ShellCmd, when set, makes the first Responses API turn a call of
	// codex's exec_command tool; the next turn (carrying its output) gets Answer.
	ShellCmd string
	// BashTrigger, when set, makes an Anthropic turn whose request contains it
	// (and no tool_result yet) a call of claude's Bash tool running ShellCmd.
	BashTrigger string
	// Tool, when set, makes the model call an MCP tool once (see ToolCall).
	Tool *ToolCall

	mu      sync.Mutex
	reqs    []Request
	results []string
	calls   int
}

// Request is one request the server saw.
type Request struct {
	Method, Path string
	Body         []byte
	Model        string
	Stream       bool
	Text         string // every string in the JSON body, joined: where the envelope shows up
}

// New starts a server on 127.0.0.1, closed when the test ends.
//
// configure runs before the server starts: the handler reads the fields without a lock, so
// they must not change once requests can arrive (a CLI's requests come from another
// process, which gives the race detector no ordering to see).
func New(t testing.TB, answer string, configure ...func(*Server)) *Server {
	f := &Server{Answer: answer}
	for _, c := range configure {
		c(f)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// Requests returns every request seen so far.
func (f *Server) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// SawText reports whether any request body contained s.
func (f *Server) SawText(s string) bool {
	for _, r := range f.Requests() {
		if strings.Contains(r.Text, s) {
			return true
		}
	}
	return false
}

// CollectStrings appends every string inside a decoded JSON value to b, one a line.
func CollectStrings(v any, b *strings.Builder) {
	switch x := v.(type) {
	case string:
		b.WriteString(x)
		b.WriteByte('\n')
	case []any:
		for _, e := range x {
			CollectStrings(e, b)
		}
	case map[string]any:
		for _, e := range x {
			CollectStrings(e, b)
		}
	}
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	var sb strings.Builder
	CollectStrings(body, &sb)
	model, _ := body["model"].(string)
	stream, _ := body["stream"].(bool)
	path := r.URL.Path
	if i := strings.LastIndex(path, ":"); i >= 0 && strings.Contains(path, "/models/") {
		// gemini puts the model in the path: /v1beta/models/<m>:<method>
		model = path[strings.LastIndex(path[:i], "/")+1 : i]
		stream = strings.HasSuffix(path, ":streamGenerateContent")
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, Request{Method: r.Method, Path: path, Body: raw, Model: model, Stream: stream, Text: sb.String()})
	f.mu.Unlock()

	if f.Tool != nil && r.Method == http.MethodPost && f.toolTurn(w, path, raw, body, model, stream) {
		return
	}
	switch {
	case r.Method == http.MethodHead || r.Method == http.MethodGet && (path == "/" || path == ""):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-model", "object": "model", "owned_by": "fake"}},
			"models": []any{map[string]any{"name": "models/gemini-2.5-flash"}}})
	case strings.HasSuffix(path, "/responses"):
		if f.ShellCmd != "" && !strings.Contains(string(raw), "function_call_output") {
			f.shellCall(w)
			return
		}
		f.responses(w, stream)
	case strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 42})
	case strings.HasSuffix(path, "/messages"):
		if f.BashTrigger != "" && stream && strings.Contains(string(raw), f.BashTrigger) && !strings.Contains(string(raw), "tool_result") {
			f.bashCall(w, model)
			return
		}
		f.anthropic(w, model, stream)
	case strings.HasSuffix(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 42})
	case strings.Contains(path, ":streamGenerateContent") || strings.Contains(path, ":generateContent"):
		f.gemini(w, body, stream)
	case strings.HasSuffix(path, "/chat/completions"):
		f.chat(w, model, stream)
	default:
		http.Error(w, `{"error":{"message":"fake server: unknown endpoint"}}`, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) send(event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(s.w, "event: %s\n", event)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// halves splits the answer so every stream carries more than one delta.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}

func (f *Server) responses(w http.ResponseWriter, stream bool) {
	msg := map[string]any{"type": "message", "role": "assistant", "id": "msg_fake", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": f.Answer, "annotations": []any{}}}}
	usage := map[string]any{"input_tokens": 1234, "output_tokens": 56, "total_tokens": 1290,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	done := map[string]any{"id": "resp_fake", "object": "response", "status": "completed", "output": []any{msg}, "usage": usage}
	if !stream {
		writeJSON(w, done)
		return
	}
	s := newSSE(w)
	s.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_fake", "status": "in_progress", "output": []any{}}})
	s.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
		"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_fake", "content": []any{}}})
	for _, d := range halves(f.Answer) {
		s.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": d})
	}
	s.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": msg})
	s.send("response.completed", map[string]any{"type": "response.completed", "response": done})
}

func (f *Server) shellCall(w http.ResponseWriter) {
	args, _ := json.Marshal(map[string]any{"cmd": f.ShellCmd})
	item := map[string]any{"type": "function_call", "id": "fc_fake", "call_id": "call_fake", "name": "exec_command",
		"arguments": string(args), "status": "completed"}
	s := newSSE(w)
	s.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_call", "status": "in_progress", "output": []any{}}})
	added := map[string]any{"type": "function_call", "id": "fc_fake", "call_id": "call_fake", "name": "exec_command", "arguments": ""}
	s.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
	s.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	s.send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_call", "status": "completed",
		"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}}})
}

func (f *Server) bashCall(w http.ResponseWriter, model string) {
	input, _ := json.Marshal(map[string]any{"command": f.ShellCmd, "description": "run the nested check"})
	s := newSSE(w)
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_call", "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	s.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": "toolu_fake", "name": "Bash", "input": map[string]any{}}})
	s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}

func (f *Server) anthropic(w http.ResponseWriter, model string, stream bool) {
	if model == "" {
		model = "claude-fake"
	}
	if !stream {
		writeJSON(w, map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "text", "text": f.Answer}}, "stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 1234, "output_tokens": 56}})
		return
	}
	s := newSSE(w)
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1234, "output_tokens": 1}}})
	s.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	for _, d := range halves(f.Answer) {
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": d}})
	}
	s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 56}})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}

func (f *Server) gemini(w http.ResponseWriter, body map[string]any, stream bool) {
	text := f.Answer
	if gc, ok := body["generationConfig"].(map[string]any); ok && gc["responseMimeType"] == "application/json" {
		// helper calls (model router, next-speaker check) want JSON, not prose
		text = `{"reasoning":"fake","model_choice":"flash","next_speaker":"user"}`
	}
	chunk := func(t string, final bool) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": t}}}, "index": 0}
		if final {
			c["finishReason"] = "STOP"
		}
		m := map[string]any{"candidates": []any{c}}
		if final {
			m["usageMetadata"] = map[string]any{"promptTokenCount": 1234, "candidatesTokenCount": 56, "totalTokenCount": 1290}
		}
		return m
	}
	if !stream {
		writeJSON(w, chunk(text, true))
		return
	}
	s := newSSE(w)
	parts := halves(text)
	for i, p := range parts {
		s.send("", chunk(p, i == len(parts)-1))
	}
}

func (f *Server) chat(w http.ResponseWriter, model string, stream bool) {
	if model == "" {
		model = "fake-model"
	}
	usage := map[string]any{"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
	if !stream {
		writeJSON(w, map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": f.Answer}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	s := newSSE(w)
	base := func(choices []any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
	}
	s.send("", base([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}))
	for _, d := range halves(f.Answer) {
		s.send("", base([]any{map[string]any{"index": 0, "delta": map[string]any{"content": d}, "finish_reason": nil}}))
	}
	s.send("", base([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}))
	u := base([]any{})
	u["usage"] = usage
	s.send("", u)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
