package mcp

import (
	"context"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts are the slash commands hosts build from MCP prompts (Gemini CLI and
// Qwen Code show them as /relay-ask and /relay-apply, Claude Code as
// /mcp__relay__relay-ask): the same two commands relay install writes for
// Claude Code, so every host gets them. They cost the model nothing until used.

var prompts = []struct{ name, desc, text string }{
	{"relay-ask", "Ask other agent CLIs (codex, gemini, qwen, …) for a second opinion through relay",
		`Use the relay ` + "`ask`" + ` tool for this request: {{request}}

- If it starts with "to:" followed by comma-separated names, pass them as "to"; otherwise leave "to" out.
- If it mentions the diff or a review of the current change, set "diff": true.
- Send the rest as "prompt", with the context the friend needs in "context".
- If an answer comes back as a ref with a preview, read what you need with the read tool (op "get") instead of asking again.

Then report each friend's answer, noting where they agree and disagree.`},
	{"relay-apply", "Make a change as a logged, revertable relay transaction (or: revert [uuid], log)",
		`Use the relay ` + "`edit_files`" + ` tool for: {{request}}

- "log": call the read tool with op "log" and list the transactions.
- "revert" (optionally a uuid or index): call edit_files with op "revert" and "ref".
- Otherwise make the change with op "edit" (path, old_string copied exactly from the file, new_string), one call per edit; use "dry_run": true first when unsure.

Report each transaction uuid so the user can undo it.`},
}

func (s *Server) addPrompts() {
	for _, p := range prompts {
		text := p.text
		s.srv.AddPrompt(&sdk.Prompt{Name: p.name, Description: p.desc,
			Arguments: []*sdk.PromptArgument{{Name: "request", Description: "what to do", Required: true}}},
			func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				r := strings.TrimSpace(req.Params.Arguments["request"])
				return &sdk.GetPromptResult{Description: p.desc, Messages: []*sdk.PromptMessage{{Role: "user",
					Content: &sdk.TextContent{Text: strings.ReplaceAll(text, "{{request}}", r)}}}}, nil
			})
	}
}
