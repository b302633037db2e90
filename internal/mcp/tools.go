package mcp

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools a host sees, one per effect, so a host can let an agent read
// freely while file changes still ask: read (memory and the change log),
// write_memory (memory only), edit_files (project files, destructive), fetch
// and ask (the open world). Every host pays for these definitions in every
// session, so they are few and written for a model: what the tool does, when
// to use it, nothing the schema already says (TestToolListBudget keeps the
// whole list under 1,500 o200k tokens).

// Tool names.
const (
	ToolRead        = "read"
	ToolWriteMemory = "write_memory"
	ToolEditFiles   = "edit_files"
	ToolFetch       = "fetch"
	ToolAsk         = "ask"
)

// ReadOnlyTools are the tools that change nothing: hosts may run them without asking
// (relay install allows exactly these).
var ReadOnlyTools = []string{ToolRead}

// WriteTools change memory, files, or reach beyond the machine: hosts ask first
// unless relay install --allow-writes.
var WriteTools = []string{ToolWriteMemory, ToolEditFiles, ToolFetch, ToolAsk}

// Instructions is the server's instructions text: when an agent should reach for relay
// (hosts' tool search matches on it).
const Instructions = `relay: safe file changes, second opinions and shared memory for coding agents.
- Change project files with edit_files: every change is a logged transaction, undone with edit_files op=revert.
- Ask another agent CLI (codex, claude, gemini, …) for a review or second opinion with ask.
- Keep facts and large content in memory and pass refs instead of re-sending text: read (header, get, search), write_memory (patch, put).
Large results come back as a ref plus a preview; page through them with read op=get.`

var (
	yes = func() *bool { b := true; return &b }()
	no  = func() *bool { b := false; return &b }()
)

// objectSchema is every tool's outputSchema: results are JSON objects in the
// HTTP API's shapes (docs/api.md, docs/mcp.md), different per op.
var objectSchema = json.RawMessage(`{"type":"object"}`)

func tools(backends []string) []*sdk.Tool {
	return []*sdk.Tool{
		{Name: ToolRead, Title: "Read relay memory and change log", Description: readDescription, InputSchema: readSchema(),
			OutputSchema: objectSchema,
			Annotations:  &sdk.ToolAnnotations{Title: "Read relay memory and change log", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: no, OpenWorldHint: no}},
		{Name: ToolWriteMemory, Title: "Write relay memory", Description: writeDescription, InputSchema: writeSchema(),
			OutputSchema: objectSchema,
			Annotations:  &sdk.ToolAnnotations{Title: "Write relay memory", DestructiveHint: no, OpenWorldHint: no}},
		{Name: ToolEditFiles, Title: "Edit project files (revertable)", Description: editDescription, InputSchema: editSchema,
			OutputSchema: objectSchema,
			Annotations:  &sdk.ToolAnnotations{Title: "Edit project files (revertable)", DestructiveHint: yes, OpenWorldHint: no}},
		{Name: ToolFetch, Title: "Fetch a URL into memory", Description: fetchDescription, InputSchema: fetchSchema,
			OutputSchema: objectSchema,
			Annotations:  &sdk.ToolAnnotations{Title: "Fetch a URL into memory", DestructiveHint: no, OpenWorldHint: yes}},
		{Name: ToolAsk, Title: "Ask another agent", Description: askDescription, InputSchema: askSchema(backends),
			OutputSchema: objectSchema,
			// a friend with sandbox workspace-write may change files
			Annotations: &sdk.ToolAnnotations{Title: "Ask another agent", DestructiveHint: yes, OpenWorldHint: yes}},
	}
}

const readDescription = `Read relay's shared memory and this project's change log; changes nothing. thread defaults to $RELAY_THREAD or this project's thread.
header(since: only changes after that version); state(version); get(ref, offset, length): an artifact, in pages; search(query, type, limit); events(after, limit); log(limit): the file transactions edit_files made; job(id, wait: seconds): a background ask's status and answers.`

const writeDescription = `Write relay's shared memory (never project files); pass refs instead of re-sending text.
new_thread(name; names are unique); patch(patch: RFC 6902 ops, version: the one you read; a conflict returns the current version, re-read and retry); put(content, name, type) -> ref.`

const editDescription = `Change project files. Every change is one logged, revertable transaction (read op=log lists them).
edit: replace old_string (must match once unless replace_all; empty creates the file) with new_string in path. answer: apply an answer in any edit format (relay's, a git diff, a codex patch, SEARCH/REPLACE, edit JSON, whole files). revert: undo a transaction (ref: uuid or index, 1 = latest; force discards later edits).
dry_run shows the plan and changes nothing. Approval follows the project config.`

const fetchDescription = `Fetch a public http(s) URL; the body is stored in memory and you get its ref and a preview.`

const askDescription = `Ask other coding-agent CLIs for a second opinion or review; several "to" run in parallel. A long answer comes back as a ref plus preview (read op=get). background: returns a job id now; read op=job fetches it.`

var artifactTypes = []string{"markdown", "json", "html", "text", "binary", "tool_output", "email"}

func readSchema() json.RawMessage {
	types, _ := json.Marshal(artifactTypes)
	return json.RawMessage(`{"type":"object","required":["op"],"additionalProperties":false,"properties":{` +
		`"op":{"enum":["header","state","get","search","events","log","job"]},` +
		`"thread":{"type":"string"},` +
		`"since":{"type":"integer","minimum":0},` +
		`"version":{"type":"integer","minimum":0},` +
		`"ref":{"type":"string"},` +
		`"offset":{"type":"integer","minimum":0},` +
		`"length":{"type":"integer","minimum":1},` +
		`"query":{"type":"string"},` +
		`"type":{"enum":` + string(types) + `},` +
		`"after":{"type":"integer","minimum":0},` +
		`"limit":{"type":"integer","minimum":1},` +
		`"id":{"type":"string"},` +
		`"wait":{"type":"integer","minimum":0,"maximum":30}}}`)
}

func writeSchema() json.RawMessage {
	types, _ := json.Marshal(artifactTypes)
	return json.RawMessage(`{"type":"object","required":["op"],"additionalProperties":false,"properties":{` +
		`"op":{"enum":["new_thread","patch","put"]},` +
		`"thread":{"type":"string"},` +
		`"name":{"type":"string"},` +
		`"version":{"type":"integer","minimum":0},` +
		`"patch":{"type":"array","items":{"type":"object"}},` +
		`"content":{"type":"string"},` +
		`"type":{"enum":` + string(types) + `}}}`)
}

var editSchema = json.RawMessage(`{"type":"object","required":["op"],"additionalProperties":false,"properties":{` +
	`"op":{"enum":["edit","answer","revert"]},` +
	`"path":{"type":"string","description":"relative to the project root"},` +
	`"old_string":{"type":"string"},` +
	`"new_string":{"type":"string"},` +
	`"replace_all":{"type":"boolean"},` +
	`"answer":{"type":"string"},` +
	`"format":{"enum":["relay","diff","codex","search-replace","edit","whole"],"description":"answer's format; default: detect"},` +
	`"ref":{"type":"string"},` +
	`"force":{"type":"boolean"},` +
	`"dry_run":{"type":"boolean"}}}`)

var fetchSchema = json.RawMessage(`{"type":"object","required":["url"],"additionalProperties":false,"properties":{` +
	`"url":{"type":"string"},"thread":{"type":"string"}}}`)

// askSchema lists the friends; its properties are AskArgs' fields, so an ask option is one
// line here and one field there.
func askSchema(backends []string) json.RawMessage {
	enum, _ := json.Marshal(backends)
	return json.RawMessage(`{"type":"object","required":["prompt"],"additionalProperties":false,"properties":{` +
		`"prompt":{"type":"string"},` +
		`"to":{"type":"array","items":{"enum":` + string(enum) + `},"description":"default [\"codex\"]"},` +
		`"context":{"type":"string","description":"extra context text"},` +
		`"context_file":{"type":"string"},` +
		`"diff":{"type":"boolean","description":"include the uncommitted git diff"},` +
		`"diff_base":{"type":"string","description":"include git diff REF...HEAD plus uncommitted changes"},` +
		`"sandbox":{"enum":["read-only","workspace-write"],"description":"default read-only"},` +
		`"model":{"type":"string"},` +
		`"session":{"type":"string","description":"label that continues a conversation"},` +
		`"timeout":{"type":"integer","minimum":1,"description":"seconds"},` +
		`"thread":{"type":"string"},` +
		`"schema":{"type":"object","description":"JSON Schema the answer must match"},` +
		`"verdict":{"type":"boolean","description":"approve or request-changes with findings"},` +
		`"review":{"type":"boolean","description":"review uncommitted changes; prompt optional"},` +
		`"base":{"type":"string","description":"review REF...HEAD"},` +
		`"background":{"type":"boolean"}}}`)
}
