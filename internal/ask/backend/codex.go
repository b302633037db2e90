package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// codexSpec drives `codex exec` (codex-cli 0.169): prompt on stdin via "-",
// JSONL events on stdout as it works (thread id, commands, messages, errors,
// usage), the answer from the --output-last-message file.
type codexSpec struct{}

func (codexSpec) name() string         { return "codex" }
func (codexSpec) exe() string          { return "codex" }
func (codexSpec) label() string        { return "codex exec" }
func (codexSpec) installHint() string  { return "npm install -g @openai/codex" }
func (codexSpec) sandboxes() []string  { return AllSandboxes }
func (codexSpec) sessions() bool       { return true }
func (codexSpec) emptyMessage() string { return "codex exec completed without producing feedback" }
func (codexSpec) parser() outputParser { return &codexParser{} }

func (codexSpec) plan(req Request, exe, tmpDir string) (Invocation, error) {
	outFile := filepath.Join(tmpDir, "codex-last-message.txt")
	var args []string
	if req.Session.Resume {
		// resume refuses -C and --sandbox; the sandbox goes in as a config
		// override so a resumed turn never falls back to the user's default.
		args = []string{"exec", "resume", req.Session.ID, "--skip-git-repo-check",
			"-c", fmt.Sprintf("sandbox_mode=%q", req.Sandbox)}
	} else {
		args = []string{"exec", "-C", req.Repo, "--skip-git-repo-check", "--sandbox", req.Sandbox}
		if !req.Session.Persist {
			args = append(args, "--ephemeral")
		}
	}
	args = append(args, "--json", "--output-last-message", outFile)
	if len(req.Schema) > 0 {
		schemaFile := filepath.Join(tmpDir, "schema.json")
		if err := os.WriteFile(schemaFile, req.Schema, 0o600); err != nil {
			return Invocation{}, &Error{Backend: "codex", Message: fmt.Sprintf("Failed writing the schema for codex: %v", err),
				Hint: "check that $TMPDIR is writable and has space"}
		}
		args = append(args, "--output-schema", schemaFile)
	}
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	args = append(args, "-") // prompt on stdin: never in argv
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt, OutputFile: outFile}, nil
}

type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Message  string `json:"message"`
		Command  string `json:"command"`
		ExitCode *int   `json:"exit_code"`
		Server   string `json:"server"`
		Tool     string `json:"tool"`
		Query    string `json:"query"`
	} `json:"item"`
	Usage *struct {
		InputTokens  *int64 `json:"input_tokens"`
		OutputTokens *int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// codexParser reads `codex exec --json` as it arrives.
type codexParser struct {
	threadID   string
	lastText   string
	input      *int64
	output     *int64
	errs       []string
	sawJSON    bool
	nonJSONOut []string
}

func (c *codexParser) line(s *stream, stderr bool, raw []byte) {
	line := strings.TrimSpace(string(raw))
	if stderr || line == "" {
		return // stderr is codex's banner and tracing; its events are on stdout
	}
	var ev codexEvent
	if line[0] != '{' || json.Unmarshal([]byte(line), &ev) != nil || ev.Type == "" {
		c.nonJSONOut = append(c.nonJSONOut, line)
		return
	}
	c.sawJSON = true
	switch ev.Type {
	case "thread.started":
		c.threadID = ev.ThreadID
		s.status("started thread " + ev.ThreadID)
	case "turn.started":
		s.status("waiting for the model")
	case "item.started":
		if ev.Item != nil {
			if d := codexDoing(ev.Item.Type, ev.Item.Command, ev.Item.Server, ev.Item.Tool, ev.Item.Query); d != "" {
				s.progress()
				s.status(d)
			}
		}
	case "item.completed":
		if ev.Item == nil {
			return
		}
		switch ev.Item.Type {
		case "agent_message":
			c.lastText = ev.Item.Text
			s.text(ev.Item.Text)
		case "error":
			s.problem(ev.Item.Message)
		case "command_execution":
			s.progress()
			done := "ran `" + ev.Item.Command + "`"
			if ev.Item.ExitCode != nil {
				done += fmt.Sprintf(" (exit %d)", *ev.Item.ExitCode)
			}
			s.status(done)
		case "reasoning":
			s.progress()
			s.status("thought it over")
		default:
			s.progress()
		}
	case "turn.completed":
		s.progress()
		if ev.Usage != nil {
			c.input, c.output = ev.Usage.InputTokens, ev.Usage.OutputTokens
		}
		s.status("finished its turn")
	case "turn.failed":
		if ev.Error != nil && ev.Error.Message != "" {
			c.errs = append(c.errs, ev.Error.Message)
			s.problem(ev.Error.Message)
		}
	case "error":
		if ev.Message != "" {
			c.errs = append(c.errs, ev.Message)
			s.problem(ev.Message)
		}
	}
}

// codexDoing describes an item codex started.
func codexDoing(typ, command, server, tool, query string) string {
	switch typ {
	case "command_execution":
		return "running `" + command + "`"
	case "reasoning":
		return "thinking"
	case "file_change":
		return "editing files"
	case "mcp_tool_call":
		return "calling " + server + "." + tool
	case "web_search":
		return "searching the web for " + query
	case "agent_message":
		return "writing"
	}
	return ""
}

func (c *codexParser) result(_ *stream, inv Invocation, out Output) (Result, error) {
	res := Result{SessionID: c.threadID, InputTokens: c.input, OutputTokens: c.output}
	msg, err := readLastMessage(inv.OutputFile)
	if err != nil {
		return Result{}, &Error{Backend: "codex", Message: fmt.Sprintf("Failed reading Codex output file: %v", err),
			Hint: "check that $TMPDIR is writable and has space"}
	}
	switch {
	case msg != "":
		res.Answer = msg
	case c.lastText != "":
		res.Answer = c.lastText
	case !c.sawJSON:
		// seed fallback: plain stdout (an older codex without --json support)
		res.Answer = strings.TrimSpace(string(out.Stdout))
	}
	return res, nil
}

func readLastMessage(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// detail follows the seed (stderr, else stdout, else the last message) but
// prefers codex's own error events over its stderr banner.
func (c *codexParser) detail(_ *stream, inv Invocation, out Output) string {
	if len(c.errs) > 0 {
		return strings.Join(c.errs, "\n")
	}
	if d := strings.TrimSpace(string(out.Stderr)); d != "" {
		return d
	}
	if len(c.nonJSONOut) > 0 {
		return strings.Join(c.nonJSONOut, "\n")
	}
	if msg, _ := readLastMessage(inv.OutputFile); msg != "" {
		return msg
	}
	return ""
}
