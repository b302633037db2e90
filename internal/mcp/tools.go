package mcp

import (
	"encoding/json"
	"strings"
)

// The three tools a host sees. Every host pays for these definitions in every
// session, so they are few, grouped by op, and written for a model: what the
// tool does, when to use it, nothing repeated from the schema.

const askDescription = `Ask other coding-agent CLIs for a second opinion or review; several "to" run in parallel. A long answer is stored in memory and returned as a ref plus preview (read it with memory op=get).`

const applyDescription = `Change project files as one logged, revertable transaction.
op=answer: apply an answer in any edit format (relay's, a git diff, a codex patch, SEARCH/REPLACE, edit JSON, whole files); format forces one when it is mixed.
op=edit: replace old_string (must match exactly once unless replace_all) with new_string in path.
op=revert: undo a transaction (ref: uuid or index, 1 = latest).
op=log: list transactions.
Approval follows the project config; dry_run shows the plan and changes nothing.`

const memoryDescription = `Shared agent memory (relay daemon): pass refs instead of re-sending text. thread defaults to $RELAY_THREAD or this project's thread.
new_thread(name); header(since: only changes after that version); state(version); patch(patch: RFC 6902 ops, version: the one you read; a conflict returns the current version, re-read and retry); put(content, name, type) -> ref; get(ref, offset, length); search(query, type, limit); fetch(url) -> ref + preview; events(after, limit).`

func askSchema(backends []string) json.RawMessage {
	enum, _ := json.Marshal(backends)
	return json.RawMessage(`{"type":"object","required":["prompt"],"additionalProperties":false,"properties":{` +
		`"prompt":{"type":"string"},` +
		`"to":{"type":"array","items":{"enum":` + string(enum) + `},"description":"default [\"codex\"]"},` +
		`"context":{"type":"string","description":"extra context text"},` +
		`"context_file":{"type":"string"},` +
		`"diff":{"type":"boolean","description":"include the uncommitted git diff"},` +
		`"diff_base":{"type":"string","description":"include git diff REF...HEAD plus uncommitted changes"},` +
		`"sandbox":{"enum":["read-only","workspace-write","danger-full-access"],"description":"default read-only"},` +
		`"model":{"type":"string"},` +
		`"session":{"type":"string","description":"label that continues a conversation"},` +
		`"timeout":{"type":"integer","minimum":1,"description":"seconds"},` +
		`"thread":{"type":"string"}}}`)
}

var applySchema = json.RawMessage(`{"type":"object","required":["op"],"additionalProperties":false,"properties":{` +
	`"op":{"enum":["answer","edit","revert","log"]},` +
	`"answer":{"type":"string"},` +
	`"format":{"enum":["relay","diff","codex","search-replace","edit","whole"],"description":"default: detect"},` +
	`"path":{"type":"string","description":"relative to the project root"},` +
	`"old_string":{"type":"string","description":"empty creates the file"},` +
	`"new_string":{"type":"string"},` +
	`"replace_all":{"type":"boolean"},` +
	`"dry_run":{"type":"boolean"},` +
	`"ref":{"type":"string"},` +
	`"force":{"type":"boolean","description":"revert even if the files changed since"},` +
	`"limit":{"type":"integer","minimum":1}}}`)

var memoryOps = []string{"new_thread", "header", "state", "patch", "put", "get", "search", "fetch", "events"}

var artifactTypes = []string{"markdown", "json", "html", "text", "binary", "tool_output", "email"}

func memorySchema() json.RawMessage {
	ops, _ := json.Marshal(memoryOps)
	types, _ := json.Marshal(artifactTypes)
	return json.RawMessage(`{"type":"object","required":["op"],"additionalProperties":false,"properties":{` +
		`"op":{"enum":` + string(ops) + `},` +
		`"thread":{"type":"string"},` +
		`"name":{"type":"string"},` +
		`"since":{"type":"integer","minimum":0},` +
		`"version":{"type":"integer","minimum":0},` +
		`"patch":{"type":"array","items":{"type":"object"}},` +
		`"content":{"type":"string"},` +
		`"type":{"enum":` + string(types) + `},` +
		`"ref":{"type":"string"},` +
		`"offset":{"type":"integer","minimum":0},` +
		`"length":{"type":"integer","minimum":1},` +
		`"query":{"type":"string"},` +
		`"url":{"type":"string"},` +
		`"after":{"type":"integer","minimum":0},` +
		`"limit":{"type":"integer","minimum":1}}}`)
}

// opList is for error messages.
func opList(ops []string) string { return strings.Join(ops, ", ") }
