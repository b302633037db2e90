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

// rules is seed 003's "Code changes rules 1-6", with %s for the projectId.
const rules = `Code changes rules 1-6:

1. Make sure to isolate every file's code block with:
    ` + "```" + `typescript // {filePath}
    // START

    {content}

    // END
    ` + "```" + `

2. Only write new or affected files. Ignore unaffected files in the codebase.

3. Always write the FULL source code for each file. Do not use placeholders or comments like "... rest of the code".

4. Add your step-by-step reasoning in plain text before each code block as you progress.

5. If you need to delete a file, use this exact format:
    ` + "```" + `typescript // {filePath}
    //TODO: delete this file
    ` + "```" + `

6. ALWAYS add the following YAML block at the very end of your response. Use the exact projectId shown here. Generate a new random uuid for each response.

    ` + "```" + `yaml
    projectId: %s
    uuid: (generate a random uuid)
    changeSummary:
      - edit: src/main.ts
      - new: src/components/Button.tsx
      - delete: src/utils/old-helper.ts
      - .... (so on)%s
    ` + "```"

const summaryLines = `
    promptSummary: "A detailed summary of my request."
    gitCommitMsg: "feat: A concise, imperative git commit message."`

const strategyIntro = `

Patch strategies (seed rule 3 is relaxed: for an existing file you may send a patch instead of the full file):

To modify a file with a patch, name the strategy after the path on the opening line:
    ` + "```" + `typescript // {filePath} {patchStrategy}
- If the path contains spaces, enclose it in double quotes: ` + "```" + `typescript // "src/My Component.tsx" new-unified
- {patchStrategy} is %s. Omit it to replace the whole file (use this to create a file).
`

const newUnified = `
Strategy new-unified (use for most changes; exact line numbers are not needed):
    ` + "```" + `diff // src/utils.ts new-unified
    --- src/utils.ts
    +++ src/utils.ts
    @@ ... @@
     function calculateTotal(items: number[]): number {
    -  return items.reduce((sum, item) => sum + item, 0);
    +  const total = items.reduce((sum, item) => sum + item * 1.1, 0);
    +  return Math.round(total * 100) / 100;
     }
    ` + "```" + `
- Start with ` + "`--- {filePath}`" + ` and ` + "`+++ {filePath}`" + `, then one ` + "`@@ ... @@`" + ` line per hunk.
- Include 2-3 unchanged context lines (prefixed with one space) before and after each change.
- Mark removed lines with ` + "`-`" + ` and added lines with ` + "`+`" + `. Keep the file's indentation exactly.
`

const multiSearchReplace = `
Strategy multi-search-replace (use for precise, surgical edits); repeat the block for each change:
    ` + "```" + `typescript // src/config.ts multi-search-replace
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
    ` + "```" + `json // src/config.ts edit
    [{"old_string": "retries: 3,", "new_string": "retries: 5,"}]
    ` + "```" + `
- old_string must occur in the file exactly once, copied exactly (whitespace included); add surrounding text to make it unique, or add "replace_all": true to change every occurrence.
`

const otherOps = `
Renaming or moving a file:
    ` + "```" + `json // rename-file
    {
      "from": "src/old/path/to/file.ts",
      "to": "src/new/path/to/file.ts"
    }
    ` + "```" + `

In the final YAML block, also add promptSummary (a summary of my request) and gitCommitMsg (a concise, imperative git commit message; a list of lines for a multi-line message).`

// System returns the system prompt for projectID. strategy "replace" gives
// seed 003's rules 1-6 exactly; the others add the patch-strategy section of
// seed 002 for new-unified, multi-search-replace, or both ("auto").
func System(projectID, strategy string) (string, error) {
	var b strings.Builder
	switch strategy {
	case "replace":
		fmt.Fprintf(&b, rules, projectID, "")
	case "auto", "", "new-unified", "multi-search-replace", "edit":
		fmt.Fprintf(&b, rules, projectID, summaryLines)
		switch strategy {
		case "new-unified":
			fmt.Fprintf(&b, strategyIntro, "`new-unified`")
			b.WriteString(newUnified)
		case "multi-search-replace":
			fmt.Fprintf(&b, strategyIntro, "`multi-search-replace`")
			b.WriteString(multiSearchReplace)
		case "edit":
			fmt.Fprintf(&b, strategyIntro, "`edit`")
			b.WriteString(editStrategy)
		default:
			fmt.Fprintf(&b, strategyIntro, "`new-unified` or `multi-search-replace`")
			b.WriteString(newUnified)
			b.WriteString(multiSearchReplace)
		}
		b.WriteString(otherOps)
	default:
		return "", fmt.Errorf("unknown strategy %q: use one of %s", strategy, strings.Join(Strategies, ", "))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// InitMessage is exactly what seed 003's `relay --init` prints: a banner,
// rules 1-6 for projectID, and the pointer to `relay watch`.
func InitMessage(projectID string) string {
	body, _ := System(projectID, "replace") // "replace" is always valid
	return "✅ relaycode has been initialized for this project.\n\n" +
		"IMPORTANT: For relaycode to work, you must configure your AI assistant.\n" +
		"Copy the entire text below and paste it into your LLM's \"System Prompt\"\n" +
		"or \"Custom Instructions\" section.\n" +
		rule + "\n\n" + body + rule + "\n" +
		"You are now ready to run 'relay watch' in your terminal.\n"
}
