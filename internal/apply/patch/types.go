// Package patch turns an LLM's response into file operations and applies
// patch strategies to file contents. It is pure: no file system, no network.
package patch

// Strategy names how a code block's body changes its file.
type Strategy string

// The strategies relay understands. The relaycode 1.1 names standard-diff and
// search-replace are accepted by the parser as aliases of Unified and
// MultiSearchReplace.
const (
	Replace            Strategy = "replace"
	NewUnified         Strategy = "new-unified"
	MultiSearchReplace Strategy = "multi-search-replace"
	Unified            Strategy = "unified"
	ApplyPatch         Strategy = "apply-patch"
	// EditStrategy is old_string/new_string edits that replace a unique
	// substring (JSON, or SEARCH/REPLACE blocks whose SEARCH is any text).
	EditStrategy Strategy = "edit"
)

// OpKind is what an operation does to the project.
type OpKind string

// Operation kinds, as in relaycode's FileOperation.
const (
	OpWrite  OpKind = "write"
	OpDelete OpKind = "delete"
	OpRename OpKind = "rename"
)

// Operation is one file change parsed from a response, in response order.
type Operation struct {
	Kind OpKind `yaml:"type" json:"type"`
	// Path is the file written or deleted (slash-separated, relative).
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// From and To are set for renames.
	From string `yaml:"from,omitempty" json:"from,omitempty"`
	To   string `yaml:"to,omitempty" json:"to,omitempty"`
	// Content is the block body: the whole file for Replace, the patch text otherwise.
	Content  string   `yaml:"content,omitempty" json:"content,omitempty"`
	Strategy Strategy `yaml:"patchStrategy,omitempty" json:"patchStrategy,omitempty"`
	// Overwrite lets a rename replace an existing file at To: a codex
	// `*** Move to:` onto an existing file replaces it (codex's semantics).
	Overwrite bool `yaml:"overwrite,omitempty" json:"overwrite,omitempty"`
	// Create is set when the answer's format says the file is new (a diff
	// from /dev/null, a codex Add File, a str_replace_editor create): relay
	// watch may then write a path that does not exist yet.
	Create bool `yaml:"-" json:"create,omitempty"`
	// Edits are the EditStrategy edits of a write made from typed edits (an
	// agent's edit call), used instead of parsing Content.
	Edits []Edit `yaml:"edits,omitempty" json:"edits,omitempty"`
}

// ChangeSummaryItem is one `- edit: path` line of the control block.
type ChangeSummaryItem struct {
	Action string `yaml:"action" json:"action"` // edit, new, delete or rename
	Path   string `yaml:"path" json:"path"`
}

// Control is the YAML block that ends a relay response.
type Control struct {
	ProjectID     string              `yaml:"projectId" json:"projectId"`
	UUID          string              `yaml:"uuid" json:"uuid"`
	ChangeSummary []ChangeSummaryItem `yaml:"changeSummary,omitempty" json:"changeSummary,omitempty"`
	GitCommitMsg  string              `yaml:"gitCommitMsg,omitempty" json:"gitCommitMsg,omitempty"`
	PromptSummary string              `yaml:"promptSummary,omitempty" json:"promptSummary,omitempty"`
}

// IgnoredBlock is a fenced block the parser skipped, and why.
type IgnoredBlock struct {
	Line   int    `json:"line"` // 1-based line of the opening fence
	Header string `json:"header"`
	Reason string `json:"reason"`
}

// Response is a parsed LLM response.
type Response struct {
	Control    Control        `json:"control"`
	Operations []Operation    `json:"operations"`
	Reasoning  []string       `json:"reasoning"`
	Ignored    []IgnoredBlock `json:"ignored,omitempty"`
	// Format is the format the answer was written in.
	Format Format `json:"format,omitempty"`
	// Bare is set when the answer had no control block: its uuid and summary
	// were made up by relay and there is no projectId to check.
	Bare   bool   `json:"bare,omitempty"`
	cutOff string // why the response looks cut off, "" when it is whole
}
