package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ollama talks to a local Ollama server over its HTTP API. It has no access
// to files, so every sandbox mode is equally safe.
type ollama struct{ opts Options }

func newOllama(o Options) Backend { return &ollama{opts: o} }

// DefaultOllamaHost is Ollama's own default listen address.
const DefaultOllamaHost = "http://127.0.0.1:11434"

func (*ollama) Name() string           { return "ollama" }
func (*ollama) Executable() string     { return "" }
func (*ollama) InstallHint() string    { return "https://ollama.com/download" }
func (*ollama) Sandboxes() []string    { return AllSandboxes }
func (*ollama) SupportsSessions() bool { return false }

// OllamaHost normalises OLLAMA_HOST the way Ollama does: "host", "host:port"
// or a URL; a bare host gets port 11434, and 0.0.0.0 (a listen address) is
// dialled as 127.0.0.1.
func OllamaHost(env []string) string {
	h, _ := lookupEnv(env, "OLLAMA_HOST")
	h = strings.TrimSpace(h)
	if h == "" {
		return DefaultOllamaHost
	}
	defPort := "11434"
	if strings.Contains(h, "://") {
		switch {
		case strings.HasPrefix(h, "https://"):
			defPort = "443"
		case strings.HasPrefix(h, "http://"):
			defPort = "80"
		}
	} else {
		h = "http://" + h
	}
	u, err := url.Parse(h)
	if err != nil {
		return strings.TrimRight(h, "/")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = defPort
	}
	u.Host = net.JoinHostPort(host, port)
	return strings.TrimRight(u.String(), "/")
}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Stream   bool            `json:"stream"`
}

type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type ollamaChatResponse struct {
	Model           string         `json:"model"`
	Message         *ollamaMessage `json:"message"`
	PromptEvalCount *int64         `json:"prompt_eval_count"`
	EvalCount       *int64         `json:"eval_count"`
	Error           string         `json:"error"`
}

func (o *ollama) Run(ctx context.Context, req Request) (Result, error) {
	host := OllamaHost(req.Env)
	model := req.Model
	if model == "" {
		model, _ = lookupEnv(req.Env, "OLLAMA_MODEL")
	}
	if model == "" {
		return Result{}, &Error{Backend: "ollama", Kind: KindRefused, Message: "ollama needs a model",
			Hint: "pass --model (e.g. --model llama3.2) or set OLLAMA_MODEL; `ollama list` shows what is installed"}
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	body, _ := json.Marshal(ollamaChatRequest{Model: model, Stream: false,
		Messages: []ollamaMessage{{Role: "user", Content: req.Prompt}}})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, host+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return Result{}, &Error{Backend: "ollama", Message: fmt.Sprintf("Invalid OLLAMA_HOST %q: %v", host, err),
			Hint: "set OLLAMA_HOST to host:port, e.g. 127.0.0.1:11434"}
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := o.opts.HTTPClient.Do(hreq)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{}, &Error{Backend: "ollama", Kind: KindTimeout,
				Message: fmt.Sprintf("ollama timed out after %s", secs(req.Timeout)),
				Hint:    fmt.Sprintf("raise --timeout (it was %s) or use a smaller model", secs(req.Timeout))}
		}
		return Result{}, &Error{Backend: "ollama", Kind: KindUnreachable,
			Message: fmt.Sprintf("Ollama server not reachable at %s: %v", host, err),
			Hint:    "start it with `ollama serve`, or point OLLAMA_HOST at a running server"}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{}, &Error{Backend: "ollama", Kind: KindTimeout,
				Message: fmt.Sprintf("ollama timed out after %s", secs(req.Timeout)),
				Hint:    fmt.Sprintf("raise --timeout (it was %s) or use a smaller model", secs(req.Timeout))}
		}
		return Result{}, &Error{Backend: "ollama", Message: fmt.Sprintf("Failed reading the Ollama reply: %v", err), Hint: "try again"}
	}
	var r ollamaChatResponse
	_ = json.Unmarshal(raw, &r)
	if resp.StatusCode != http.StatusOK {
		detail := strings.TrimSpace(r.Error)
		if detail == "" {
			detail = strings.TrimSpace(string(raw))
		}
		if len(detail) > 200 {
			detail = detail[:200]
		}
		e := &Error{Backend: "ollama", ExitCode: resp.StatusCode,
			Message: fmt.Sprintf("Ollama returned HTTP %d: %s", resp.StatusCode, detail),
			Hint:    "check the server log (`ollama serve`)"}
		if resp.StatusCode == http.StatusNotFound {
			e.Hint = fmt.Sprintf("pull the model first: ollama pull %s", model)
		}
		return Result{}, e
	}
	res := Result{Model: r.Model, InputTokens: r.PromptEvalCount, OutputTokens: r.EvalCount}
	if r.Message != nil {
		res.Answer = strings.TrimSpace(r.Message.Content)
	}
	if res.Answer == "" {
		return Result{}, &Error{Backend: "ollama", Kind: KindEmpty, Message: "ollama completed without producing output",
			Hint: "ask again, or try another model"}
	}
	return res, nil
}

// ProbeOllama reports whether an Ollama server answers and its version.
func ProbeOllama(ctx context.Context, client *http.Client, host string) (version string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/api/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var v struct {
		Version string `json:"version"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&v)
	return v.Version, nil
}
