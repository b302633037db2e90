package backend

import (
	"encoding/json"
	"sort"
	"strings"
)

// geminiSpec drives the Gemini CLI (0.61): the prompt in -p up to
// ArgvPromptMax, above that on stdin with a short -p (its text is appended
// after stdin); --skip-trust so an untrusted folder does not exit 55, and
// --approval-mode for the sandbox because --sandbox needs Docker or Podman on Linux.
type geminiSpec struct{}

// geminiPromptSuffix is the -p text; gemini appends it after the stdin prompt.
const geminiPromptSuffix = "(end of request)"

func (geminiSpec) name() string         { return "gemini" }
func (geminiSpec) exe() string          { return "gemini" }
func (geminiSpec) label() string        { return "gemini" }
func (geminiSpec) installHint() string  { return "npm install -g @google/gemini-cli" }
func (geminiSpec) sandboxes() []string  { return AllSandboxes }
func (geminiSpec) sessions() bool       { return true }
func (geminiSpec) emptyMessage() string { return "gemini completed without producing output" }

func geminiApproval(sandbox string) []string {
	switch sandbox {
	case WorkspaceWrite:
		return []string{"--approval-mode", "auto_edit"}
	case DangerFullAccess:
		return []string{"--yolo"}
	}
	return []string{"--approval-mode", "plan"}
}

func (geminiSpec) plan(req Request, exe, _ string) (Invocation, error) {
	args := []string{"--skip-trust"}
	args = append(args, geminiApproval(req.Sandbox)...)
	args = append(args, "--include-directories", req.Repo, "--output-format", "json")
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	if req.Session.ID != "" {
		if req.Session.Resume {
			args = append(args, "--resume", req.Session.ID)
		} else {
			args = append(args, "--session-id", req.Session.ID)
		}
	}
	if len(req.Prompt) <= ArgvPromptMax {
		return Invocation{Path: exe, Args: append(args, "--prompt", req.Prompt), Dir: req.Repo, Env: req.Env}, nil
	}
	args = append(args, "--prompt", geminiPromptSuffix)
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt}, nil
}

type geminiJSON struct {
	SessionID string  `json:"session_id"`
	Response  *string `json:"response"`
	Stats     *struct {
		Models map[string]struct {
			Tokens struct {
				Input      *int64 `json:"input"`
				Prompt     *int64 `json:"prompt"`
				Candidates *int64 `json:"candidates"`
			} `json:"tokens"`
		} `json:"models"`
	} `json:"stats"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeTrailingJSON parses a JSON document that may follow log lines.
func decodeTrailingJSON(stdout []byte, v any) bool {
	s := strings.TrimSpace(string(stdout))
	if s == "" {
		return false
	}
	if json.Unmarshal([]byte(s), v) == nil {
		return true
	}
	for i := strings.Index(s, "\n{"); i >= 0; {
		if json.Unmarshal([]byte(s[i+1:]), v) == nil {
			return true
		}
		j := strings.Index(s[i+1:], "\n{")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

func (geminiSpec) parse(_ Invocation, out Output) (Result, error) {
	var g geminiJSON
	if !decodeTrailingJSON(out.Stdout, &g) || g.Response == nil {
		if g.Error != nil && g.Error.Message != "" {
			return Result{}, &Error{Backend: "gemini", Message: g.Error.Message, Hint: "run `gemini` by hand in the repository to see more"}
		}
		return Result{Answer: strings.TrimSpace(string(out.Stdout))}, nil
	}
	res := Result{Answer: *g.Response, SessionID: g.SessionID}
	if g.Stats != nil && len(g.Stats.Models) > 0 {
		var in, outTok int64
		var haveIn, haveOut bool
		var best string
		var bestOut int64 = -1
		names := make([]string, 0, len(g.Stats.Models))
		for n := range g.Stats.Models {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t := g.Stats.Models[n].Tokens
			switch {
			case t.Prompt != nil:
				in += *t.Prompt
				haveIn = true
			case t.Input != nil:
				in += *t.Input
				haveIn = true
			}
			var c int64
			if t.Candidates != nil {
				c = *t.Candidates
				outTok += c
				haveOut = true
			}
			if c > bestOut { // the model that wrote the answer, not the router
				best, bestOut = n, c
			}
		}
		res.Model = best
		if haveIn {
			res.InputTokens = ptr(in)
		}
		if haveOut {
			res.OutputTokens = ptr(outTok)
		}
	}
	return res, nil
}

func (geminiSpec) detail(_ Invocation, out Output) string {
	var g geminiJSON
	if decodeTrailingJSON(out.Stdout, &g) && g.Error != nil && g.Error.Message != "" {
		return g.Error.Message
	}
	return defaultDetail(out)
}
