package hosts

// commandMarker identifies the slash-command files relay wrote, so install
// never overwrites and uninstall never removes a user's own command.
const commandMarker = "<!-- written by relay install; relay uninstall claude removes it -->"

var slashCommands = []struct{ file, text string }{
	{"relay-ask.md", `---
description: Ask other agent CLIs (codex, gemini, qwen, …) for a second opinion through relay
argument-hint: "[to:codex,gemini] [diff] <question>"
allowed-tools: mcp__relay__ask, mcp__relay__read
---
` + commandMarker + `

Ask a friend through the relay MCP server's ` + "`ask`" + ` tool.

Request: $ARGUMENTS

- If the request starts with ` + "`to:`" + ` followed by comma-separated names, pass them as ` + "`to`" + `;
  otherwise leave ` + "`to`" + ` out (relay's default friend answers).
- If it mentions the diff or a review of the current change, set ` + "`diff: true`" + `.
- Send the rest as ` + "`prompt`" + `, with the context the friend needs in ` + "`context`" + `.
- If the answer comes back as a ` + "`ref`" + ` with a preview, read the parts you need with the
  ` + "`read`" + ` tool (` + "`op: get`" + `) instead of asking again.

Then report each friend's answer, noting where they agree and disagree.
`},
	{"relay-apply.md", `---
description: Apply a change as a logged, revertable relay transaction
argument-hint: "<what to change> | revert [uuid] | log"
allowed-tools: mcp__relay__edit_files, mcp__relay__read
---
` + commandMarker + `

Use the relay MCP server's ` + "`edit_files`" + ` tool for: $ARGUMENTS

- ` + "`log`" + `: call ` + "`read`" + ` with ` + "`op: log`" + ` and list the transactions.
- ` + "`revert`" + ` (optionally a uuid or index): call edit_files with ` + "`op: revert`" + ` and ` + "`ref`" + `.
- Otherwise make the change with ` + "`op: edit`" + ` (` + "`path`" + `, ` + "`old_string`" + ` copied exactly from the
  file, ` + "`new_string`" + `), one call per edit; call it first with ` + "`dry_run: true`" + ` when unsure.

Report each transaction uuid, so the user can undo it with /relay-apply revert <uuid>.
`},
}
