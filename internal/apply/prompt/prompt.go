// Package prompt owns the system prompt relay gives to the user's LLM: the
// response format that internal/patch parses.
package prompt

import (
	"fmt"
	"strings"
)

// Strategies are the values of --strategy and watcher.preferredStrategy.
var Strategies = []string{"auto", "replace", "new-unified", "multi-search-replace", "edit"}

const rule = "---------------------------------------------------------------------------"

// rules is relaycode's "Code changes rules 1-6", with %s for the projectId.
const rules = `Code changes rules 1-6:

1. Make sure to isolate every file's code block with:
    ` + "```" + `{lang} // {filePath}
    // START

    {content}

    // END
    ` + "```" + `

2. Only write new or affected files. Ignore unaffected files in the codebase.

3. Always write the FULL source code for each file. Do not use placeholders or comments like "... rest of the code".

4. Add your step-by-step reasoning in plain text before each code block as you progress.

5. If you need to delete a file, use this exact format:
    ` + "```" + `{lang} // {filePath}
    //TODO: delete this file
    ` + "```" + `

6. ALWAYS add the following YAML block at the very end of your response. Use the exact projectId shown here. Generate a new random uuid for each response.

    ` + "```" + `yaml
    projectId: %s
    uuid: (generate a random uuid)
    changeSummary:
      - edit: {main}
      - new: {new}
      - delete: {old}
      - .... (so on)%s
    ` + "```"

const summaryLines = `
    promptSummary: "A detailed summary of my request."
    gitCommitMsg: "feat: A concise, imperative git commit message."`

const strategyIntro = `

Patch strategies (rule 3 is relaxed: for an existing file you may send a patch instead of the full file):

To modify a file with a patch, name the strategy after the path on the opening line:
    ` + "```" + `{lang} // {filePath} {patchStrategy}
- If the path contains spaces, enclose it in double quotes: ` + "```" + `{lang} // "{spaced}" new-unified
- {patchStrategy} is %s. Omit it to replace the whole file (use this to create a file).
`

const newUnified = `
Strategy new-unified (use for most changes; exact line numbers are not needed):
    ` + "```" + `diff // {diffpath} new-unified
    --- {diffpath}
    +++ {diffpath}
    @@ ... @@
{diffbody}
    ` + "```" + `
- Start with ` + "`--- {filePath}`" + ` and ` + "`+++ {filePath}`" + `, then one ` + "`@@ ... @@`" + ` line per hunk.
- Include 2-3 unchanged context lines (prefixed with one space) before and after each change.
- Mark removed lines with ` + "`-`" + ` and added lines with ` + "`+`" + `. Keep the file's indentation exactly.
`

const multiSearchReplace = `
Strategy multi-search-replace (use for precise, surgical edits); repeat the block for each change:
    ` + "```" + `{lang} // {config} multi-search-replace
    <<<<<<< SEARCH
    [exact lines to find, including whitespace]
    =======
    [lines to put in their place]
    >>>>>>> REPLACE
    ` + "```" + `
- The SEARCH part must match the file exactly and only once; include enough lines to make it unique.
`

const editStrategy = `
Strategy edit (use to change part of a line, a few words, or one value); one JSON object per change, or a list:
    ` + "```" + `json // {config} edit
    [{"old_string": "retries: 3,", "new_string": "retries: 5,"}]
    ` + "```" + `
- old_string must occur in the file exactly once, copied exactly (whitespace included); add surrounding text to make it unique, or add "replace_all": true to change every occurrence.
`

const otherOps = `
Renaming or moving a file:
    ` + "```" + `json // rename-file
    {
      "from": "{from}",
      "to": "{to}"
    }
    ` + "```" + `

In the final YAML block, also add promptSummary (a summary of my request) and gitCommitMsg (a concise, imperative git commit message; a list of lines for a multi-line message).`

// Lang is a project's language as the prompt shows it: the code fence tag and the
// example paths.
type Lang struct {
	Fence string // code fence language: typescript, go, python, …
	// example paths in the prompt: an edited, a new, a deleted, a spaced, a config file,
	// and a rename's from and to
	Main, New, Old, Spaced, Config, From, To string
	DiffPath                                 string   // the new-unified example's file
	Diff                                     []string // its hunk lines after @@ ... @@
}

var (
	tsDiff = []string{
		" function calculateTotal(items: number[]): number {",
		"-  return items.reduce((sum, item) => sum + item, 0);",
		"+  const total = items.reduce((sum, item) => sum + item * 1.1, 0);",
		"+  return Math.round(total * 100) / 100;",
		" }"}
	jsDiff = []string{
		" function calculateTotal(items) {",
		"-  return items.reduce((sum, item) => sum + item, 0);",
		"+  const total = items.reduce((sum, item) => sum + item * 1.1, 0);",
		"+  return Math.round(total * 100) / 100;",
		" }"}
	goDiff = []string{
		" func CalculateTotal(items []float64) float64 {",
		"-\treturn sum(items)",
		"+\ttotal := sum(items) * 1.1",
		"+\treturn math.Round(total*100) / 100",
		" }"}
	pyDiff = []string{
		" def calculate_total(items: list[float]) -> float:",
		"-    return sum(items)",
		"+    total = sum(item * 1.1 for item in items)",
		"+    return round(total, 2)"}
	rsDiff = []string{
		" fn calculate_total(items: &[f64]) -> f64 {",
		"-    items.iter().sum()",
		"+    let total: f64 = items.iter().map(|i| i * 1.1).sum();",
		"+    (total * 100.0).round() / 100.0",
		" }"}
)

// langs are the languages Detect recognises; typescript is relaycode's own.
var langs = map[string]Lang{
	"typescript": {"typescript", "src/main.ts", "src/components/Button.tsx", "src/utils/old-helper.ts", "src/My Component.tsx", "src/config.ts", "src/old/path/to/file.ts", "src/new/path/to/file.ts", "src/utils.ts", tsDiff},
	"javascript": {"javascript", "src/main.js", "src/components/Button.jsx", "src/utils/old-helper.js", "src/My Component.jsx", "src/config.js", "src/old/path/to/file.js", "src/new/path/to/file.js", "src/utils.js", jsDiff},
	"go":         {"go", "main.go", "internal/button/button.go", "internal/util/old_helper.go", "internal/my pkg/file.go", "internal/config/config.go", "internal/old/file.go", "internal/new/file.go", "internal/util/total.go", goDiff},
	"python":     {"python", "src/app/main.py", "src/app/button.py", "src/app/old_helper.py", "src/my package/module.py", "src/app/config.py", "src/old/path/module.py", "src/new/path/module.py", "src/app/utils.py", pyDiff},
	"rust":       {"rust", "src/main.rs", "src/button.rs", "src/old_helper.rs", "src/my module/mod.rs", "src/config.rs", "src/old/file.rs", "src/new/file.rs", "src/utils.rs", rsDiff},
}

// Language returns the Lang for a fence name ("go", "python", …); unknown names get
// TypeScript, relaycode's examples.
func Language(name string) Lang {
	if l, ok := langs[name]; ok {
		return l
	}
	return langs["typescript"]
}

// fill puts the language into a template (before the project id goes in, so an id
// cannot contain a placeholder).
func (l Lang) fill(text string) string {
	return strings.NewReplacer("{lang}", l.Fence, "{main}", l.Main, "{new}", l.New, "{old}", l.Old,
		"{spaced}", l.Spaced, "{config}", l.Config, "{from}", l.From, "{to}", l.To,
		"{diffpath}", l.DiffPath, "{diffbody}", "    "+strings.Join(l.Diff, "\n    ")).Replace(text)
}

// System returns the system prompt for projectID with lang's code fences and example
// paths. strategy "replace" gives relaycode's rules 1-6 exactly (for TypeScript); the others
// add promptSummary/gitCommitMsg and the patch-strategy section for
// new-unified, multi-search-replace, or both ("auto").
func System(projectID, strategy string, lang Lang) (string, error) {
	var b strings.Builder
	switch strategy {
	case "replace":
		fmt.Fprintf(&b, lang.fill(rules), projectID, "")
	case "auto", "", "new-unified", "multi-search-replace", "edit":
		fmt.Fprintf(&b, lang.fill(rules), projectID, summaryLines)
		switch strategy {
		case "new-unified":
			fmt.Fprintf(&b, lang.fill(strategyIntro), "`new-unified`")
			b.WriteString(lang.fill(newUnified))
		case "multi-search-replace":
			fmt.Fprintf(&b, lang.fill(strategyIntro), "`multi-search-replace`")
			b.WriteString(lang.fill(multiSearchReplace))
		case "edit":
			fmt.Fprintf(&b, lang.fill(strategyIntro), "`edit`")
			b.WriteString(lang.fill(editStrategy))
		default:
			fmt.Fprintf(&b, lang.fill(strategyIntro), "`new-unified` or `multi-search-replace`")
			b.WriteString(lang.fill(newUnified))
			b.WriteString(lang.fill(multiSearchReplace))
		}
		b.WriteString(lang.fill(otherOps))
	default:
		return "", fmt.Errorf("unknown strategy %q: use one of %s", strategy, strings.Join(Strategies, ", "))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// InitMessage is what `relay init` prints: relaycode's banner and pointer to `relay
// watch` around the complete system prompt (System's text, which has every rule of the
// short one of relaycode plus promptSummary/gitCommitMsg and patch strategies: answers to the
// short one could not be committed with relay git commit).
func InitMessage(system string) string {
	return "✅ relaycode has been initialized for this project.\n\n" +
		"IMPORTANT: For relaycode to work, you must configure your AI assistant.\n" +
		"Copy the entire text below and paste it into your LLM's \"System Prompt\"\n" +
		"or \"Custom Instructions\" section.\n" +
		rule + "\n\n" + system + rule + "\n" +
		"You are now ready to run 'relay watch' in your terminal.\n"
}
