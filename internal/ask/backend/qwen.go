package backend

// qwenSpec drives Qwen Code (0.15): the prompt on stdin (no positional
// prompt), stream-json output in claude's shape, --approval-mode for the
// sandbox, and a client UUID pinned with --session-id, resumed with -r.
type qwenSpec struct{}

func (qwenSpec) name() string         { return "qwen" }
func (qwenSpec) exe() string          { return "qwen" }
func (qwenSpec) label() string        { return "qwen" }
func (qwenSpec) installHint() string  { return "npm install -g @qwen-code/qwen-code" }
func (qwenSpec) sandboxes() []string  { return AllSandboxes }
func (qwenSpec) sessions() bool       { return true }
func (qwenSpec) emptyMessage() string { return "qwen completed without producing output" }
func (qwenSpec) parser() outputParser { return &claudeParser{backend: "qwen"} }

func (qwenSpec) plan(req Request, exe, _ string) (Invocation, error) {
	mode := "plan"
	switch req.Sandbox {
	case WorkspaceWrite:
		mode = "auto-edit" // qwen spells it with a hyphen, gemini with an underscore
	case DangerFullAccess:
		mode = "yolo"
	}
	args := append([]string{"--approval-mode", mode}, streamJSON[0], streamJSON[1], streamJSON[3])
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	if req.Session.ID != "" {
		if req.Session.Resume {
			args = append(args, "-r", req.Session.ID)
		} else {
			args = append(args, "--session-id", req.Session.ID)
		}
	}
	// no positional prompt: qwen reads it from stdin
	return Invocation{Path: exe, Args: args, Dir: req.Repo, Env: req.Env, Stdin: req.Prompt, CheckPromptRead: true}, nil
}
