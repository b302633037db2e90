package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// codexSpec drives `codex exec` (codex-cli 0.169): prompt on stdin via "-",
// JSONL events on stdout for the thread id and usage, the answer from the
// --output-last-message file.
type codexSpec struct{}

func (codexSpec) name() string         { return "codex" }
func (codexSpec) exe() string          { return "codex" }
func (codexSpec) label() string        { return "codex exec" }
func (codexSpec) installHint() string  { return "npm install -g @openai/codex" }
func (codexSpec) sandboxes() []string  { return AllSandboxes }
func (codexSpec) sessions() bool       { return true }
func (codexSpec) emptyMessage() string { return "codex exec completed without producing feedback" }

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
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	args = append(args, "-") // prompt on stdin: one argv element is capped at 128 KiB
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt, OutputFile: outFile}, nil
}

type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
	} `json:"item"`
	Usage *struct {
		InputTokens  *int64 `json:"input_tokens"`
		OutputTokens *int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type codexStream struct {
	threadID   string
	lastText   string
	input      *int64
	output     *int64
	errs       []string
	sawJSON    bool
	nonJSONOut []string
}

func readCodexStream(stdout []byte) codexStream {
	var s codexStream
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev codexEvent
		if line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			s.nonJSONOut = append(s.nonJSONOut, string(line))
			continue
		}
		s.sawJSON = true
		switch ev.Type {
		case "thread.started":
			s.threadID = ev.ThreadID
		case "item.completed":
			if ev.Item != nil && ev.Item.Type == "agent_message" {
				s.lastText = ev.Item.Text
			}
		case "turn.completed":
			if ev.Usage != nil {
				s.input, s.output = ev.Usage.InputTokens, ev.Usage.OutputTokens
			}
		case "turn.failed":
			if ev.Error != nil && ev.Error.Message != "" {
				s.errs = append(s.errs, ev.Error.Message)
			}
		case "error":
			if ev.Message != "" {
				s.errs = append(s.errs, ev.Message)
			}
		}
	}
	return s
}

func (c codexSpec) parse(inv Invocation, out Output) (Result, error) {
	s := readCodexStream(out.Stdout)
	res := Result{SessionID: s.threadID, InputTokens: s.input, OutputTokens: s.output}
	msg, err := readLastMessage(inv.OutputFile)
	if err != nil {
		return Result{}, &Error{Backend: "codex", Message: fmt.Sprintf("Failed reading Codex output file: %v", err),
			Hint: "check that $TMPDIR is writable and has space"}
	}
	switch {
	case msg != "":
		res.Answer = msg
	case s.lastText != "":
		res.Answer = s.lastText
	case !s.sawJSON:
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
func (codexSpec) detail(inv Invocation, out Output) string {
	s := readCodexStream(out.Stdout)
	if len(s.errs) > 0 {
		return strings.Join(s.errs, "\n")
	}
	if d := strings.TrimSpace(string(out.Stderr)); d != "" {
		return d
	}
	if len(s.nonJSONOut) > 0 {
		return strings.Join(s.nonJSONOut, "\n")
	}
	if msg, _ := readLastMessage(inv.OutputFile); msg != "" {
		return msg
	}
	return ""
}
