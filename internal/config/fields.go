package config

// field describes one config key: where it lives in Config, its type and
// limits, its default and its flat alias (the older config shape). The same table drives
// loading, validation, the written defaults and the JSON Schema.
type field struct {
	path    string // nested key path, e.g. "patch.approvalMode"
	flat    string // the older flat key, "" when none
	kind    kind
	enum    []string
	min     *float64
	max     *float64
	doc     string
	get     func(*Config) any
	set     func(*Config, any)
	rawFlat func(any) (any, bool) // converts a flat value to the nested one (approval yes/no)
}

type kind int

const (
	kString kind = iota
	kBool
	kInt
	kNumber
)

func (k kind) String() string {
	return [...]string{"a string", "true or false", "an integer", "a number"}[k]
}

func fptr(f float64) *float64 { return &f }

var fields = []field{
	{path: "core.logLevel", flat: "logLevel", kind: kString, enum: []string{"silent", "error", "warn", "info", "debug"},
		doc: "How much relay prints.",
		get: func(c *Config) any { return c.Core.LogLevel }, set: func(c *Config, v any) { c.Core.LogLevel = v.(string) }},
	{path: "core.enableNotifications", flat: "enableNotifications", kind: kBool,
		doc: "Send a desktop notification (notify-send) when a patch needs approval.",
		get: func(c *Config) any { return c.Core.EnableNotifications }, set: func(c *Config, v any) { c.Core.EnableNotifications = v.(bool) }},
	{path: "core.watchConfig", flat: "watchConfig", kind: kBool,
		doc: "Reload this file while `relay watch` runs.",
		get: func(c *Config) any { return c.Core.WatchConfig }, set: func(c *Config, v any) { c.Core.WatchConfig = v.(bool) }},
	{path: "watcher.clipboardPollInterval", flat: "clipboardPollInterval", kind: kInt, min: fptr(50), max: fptr(600000),
		doc: "Milliseconds between clipboard reads when the clipboard cannot be watched.",
		get: func(c *Config) any { return c.Watcher.ClipboardPollInterval }, set: func(c *Config, v any) { c.Watcher.ClipboardPollInterval = v.(int) }},
	{path: "watcher.preferredStrategy", flat: "preferredStrategy", kind: kString, enum: []string{"auto", "replace", "new-unified", "multi-search-replace", "edit"},
		doc: "Which patch format the system prompt asks the LLM for.",
		get: func(c *Config) any { return c.Watcher.PreferredStrategy }, set: func(c *Config, v any) { c.Watcher.PreferredStrategy = v.(string) }},
	{path: "patch.approvalMode", flat: "approval", kind: kString, enum: []string{"auto", "manual"},
		doc: "auto: approve when the patch adds at most approvalOnErrorCount linter errors; manual: always ask.",
		get: func(c *Config) any { return c.Patch.ApprovalMode }, set: func(c *Config, v any) { c.Patch.ApprovalMode = v.(string) },
		rawFlat: func(v any) (any, bool) {
			switch v {
			case "yes":
				return "auto", true
			case "no":
				return "manual", true
			}
			return v, false
		}},
	{path: "patch.approvalOnErrorCount", flat: "approvalOnErrorCount", kind: kInt, min: fptr(0),
		doc: "Linter errors a patch may add and still be approved automatically.",
		get: func(c *Config) any { return c.Patch.ApprovalOnErrorCount }, set: func(c *Config, v any) { c.Patch.ApprovalOnErrorCount = v.(int) }},
	{path: "patch.linter", flat: "linter", kind: kString,
		doc: "Command whose error count decides approval; empty disables it.",
		get: func(c *Config) any { return c.Patch.Linter }, set: func(c *Config, v any) { c.Patch.Linter = v.(string) }},
	{path: "patch.preCommand", flat: "preCommand", kind: kString,
		doc: "Shell command run before a patch touches anything; failing aborts the patch.",
		get: func(c *Config) any { return c.Patch.PreCommand }, set: func(c *Config, v any) { c.Patch.PreCommand = v.(string) }},
	{path: "patch.postCommand", flat: "postCommand", kind: kString,
		doc: "Shell command run after the files change; failing rolls the patch back.",
		get: func(c *Config) any { return c.Patch.PostCommand }, set: func(c *Config, v any) { c.Patch.PostCommand = v.(string) }},
	{path: "patch.fuzzyThreshold", flat: "fuzzyThreshold", kind: kNumber, min: fptr(0.5), max: fptr(1),
		doc: "Least line similarity (0.5-1) for a fuzzy match of a SEARCH block or hunk.",
		get: func(c *Config) any { return c.Patch.FuzzyThreshold }, set: func(c *Config, v any) { c.Patch.FuzzyThreshold = v.(float64) }},
	{path: "patch.minFileChanges", flat: "minFileChanges", kind: kInt, min: fptr(0),
		doc: "Skip a response with fewer file operations than this.",
		get: func(c *Config) any { return c.Patch.MinFileChanges }, set: func(c *Config, v any) { c.Patch.MinFileChanges = v.(int) }},
	{path: "patch.maxFileChanges", flat: "maxFileChanges", kind: kInt, min: fptr(0),
		doc: "Skip a response with more file operations than this; 0 means no limit.",
		get: func(c *Config) any { return c.Patch.MaxFileChanges }, set: func(c *Config, v any) { c.Patch.MaxFileChanges = v.(int) }},
	{path: "git.autoGitBranch", flat: "autoGitBranch", kind: kBool,
		doc: "Create a git branch for every approved transaction.",
		get: func(c *Config) any { return c.Git.AutoGitBranch }, set: func(c *Config, v any) { c.Git.AutoGitBranch = v.(bool) }},
	{path: "git.gitBranchPrefix", flat: "gitBranchPrefix", kind: kString,
		doc: "Prefix of branches made by autoGitBranch.",
		get: func(c *Config) any { return c.Git.GitBranchPrefix }, set: func(c *Config, v any) { c.Git.GitBranchPrefix = v.(string) }},
	{path: "git.gitBranchTemplate", flat: "gitBranchTemplate", kind: kString, enum: []string{"uuid", "gitCommitMsg"},
		doc: "Name branches after the transaction's uuid or a slug of its commit message.",
		get: func(c *Config) any { return c.Git.GitBranchTemplate }, set: func(c *Config, v any) { c.Git.GitBranchTemplate = v.(string) }},
	{path: "clipboard.readCommand", flat: "clipboardReadCommand", kind: kString,
		doc: "Shell command that prints the clipboard; overrides detection of wl-paste, xclip, xsel, pbpaste.",
		get: func(c *Config) any { return c.Clipboard.ReadCommand }, set: func(c *Config, v any) { c.Clipboard.ReadCommand = v.(string) }},
}
