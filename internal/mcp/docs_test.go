package mcp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/relaydev/relay/internal/testsupport"
)

// docExample is one call of docs/mcp.md and the result printed under it.
type docExample struct {
	line int
	tool string
	args map[string]any
	// json is a result block (compared by shape: the same keys at every level and the
	// same kinds of values); text an error block (compared line by line).
	json, text string
}

// The examples in docs/mcp.md are what relay mcp really answers: every call written there
// runs, in order, against a real relay mcp and daemon, and each result must have the
// documented shape (values such as ids and times differ) or, for an error, the documented
// lines. A call is a {"name","arguments"} block, a backticked arguments line, or one of
// the few sentences in proseCalls that repeat the call before. An arguments line may
// name its tool first (`read {"op": "log"}`); otherwise it calls the section's tool.
func TestDocsExamplesMatchRealOutput(t *testing.T) {
	examples := parseDocExamples(t, filepath.Join(testsupport.RepoRoot(t), "docs", "mcp.md"))
	if len(examples) < 15 {
		t.Fatalf("found %d examples in docs/mcp.md; the parser lost them", len(examples))
	}
	w := newWorld(t)
	env := w.env[:0:0]
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "RELAY_FETCH_ALLOW=") { // the fetch example shows the SSRF guard
			env = append(env, kv)
		}
	}
	w.env = env
	cs := w.connect(t, nil)
	seen := map[string]string{} // a ref in the docs → the real one
	for _, ex := range examples {
		args := substitute(ex.args, seen).(map[string]any)
		text, isErr := call(t, cs, ex.tool, args)
		t.Logf("docs/mcp.md:%d %s %s\n%s", ex.line, ex.tool, mustJSON(args), text)
		if ex.text != "" {
			if !isErr || strings.TrimSpace(text) != strings.TrimSpace(ex.text) {
				t.Errorf("docs/mcp.md:%d: %s %s is documented as\n%s\nbut relay mcp answers (error %v)\n%s", ex.line, ex.tool, mustJSON(args), ex.text, isErr, text)
			}
			continue
		}
		var doc, got any
		if err := json.Unmarshal([]byte(ex.json), &doc); err != nil {
			t.Fatalf("docs/mcp.md:%d: the documented result is not JSON: %v", ex.line, err)
		}
		if isErr || json.Unmarshal([]byte(text), &got) != nil {
			t.Errorf("docs/mcp.md:%d: %s %s answers %s", ex.line, ex.tool, mustJSON(args), text)
			continue
		}
		learnRefs(doc, got, seen)
		if diffs := shapeDiff(doc, got, "$"); len(diffs) > 0 {
			t.Errorf("docs/mcp.md:%d: %s %s: the documented result differs from the real one:\n  %s\nreal: %s", ex.line, ex.tool, mustJSON(args), strings.Join(diffs, "\n  "), text)
		}
	}
}

// proseCalls are the sentences of docs/mcp.md that introduce a result of the call before,
// changed as they say.
var proseCalls = map[string]func(prev map[string]any) map[string]any{
	"The same without `dry_run`:": func(p map[string]any) map[string]any {
		c := copyArgs(p)
		delete(c, "dry_run")
		return c
	},
	"A stale `old_string`:":                   copyArgs, // the edit again: its old_string is gone now
	"The same patch again against version 1:": copyArgs,
	"An unknown or failing friend (one `to`) is an error result:": func(p map[string]any) map[string]any {
		return map[string]any{"prompt": p["prompt"], "to": []any{"nosuch"}}
	},
}

func copyArgs(p map[string]any) map[string]any {
	c := make(map[string]any, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

var (
	toolHeading = regexp.MustCompile("^### `(read|write_memory|edit_files|fetch|ask)`")
	argsLine    = regexp.MustCompile("^`(?:(read|write_memory|edit_files|fetch|ask) )?(\\{.*\\})`")
)

func parseDocExamples(t *testing.T, path string) []docExample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var (
		out  []docExample
		tool string
		prev *docExample // the last call, which a prose sentence repeats
		next *docExample // a call waiting for its result block
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := toolHeading.FindStringSubmatch(l); m != nil {
			tool = m[1]
			continue
		}
		if strings.HasPrefix(l, "## ") && !strings.HasPrefix(l, "## Tools") {
			tool = ""
		}
		if tool == "" {
			continue
		}
		if m := argsLine.FindStringSubmatch(l); m != nil {
			var args map[string]any
			if err := json.Unmarshal([]byte(m[2]), &args); err != nil {
				t.Fatalf("docs/mcp.md:%d: %v", i+1, err)
			}
			lineTool := tool
			if m[1] != "" {
				lineTool = m[1]
			}
			next = &docExample{line: i + 1, tool: lineTool, args: args}
			prev = next
			continue
		}
		if f, ok := proseCalls[strings.TrimSpace(l)]; ok && prev != nil {
			next = &docExample{line: i + 1, tool: prev.tool, args: f(prev.args)}
			prev = next
			continue
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		lang := strings.TrimPrefix(l, "```")
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		text := strings.Join(body, "\n")
		var c struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		switch {
		case lang == "json" && json.Unmarshal([]byte(text), &c) == nil && c.Name != "" && c.Arguments != nil:
			next = &docExample{line: i - len(body), tool: c.Name, args: c.Arguments}
			prev = next
		case next != nil && lang == "json":
			next.json = text
			out, next = append(out, *next), nil
		case next != nil && lang == "":
			next.text = text
			out, next = append(out, *next), nil
		}
	}
	return out
}

// substitute replaces every string in v that the docs used for a ref with the real one.
func substitute(v any, seen map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = substitute(e, seen)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = substitute(e, seen)
		}
		return c
	case string:
		if r, ok := seen[x]; ok {
			return r
		}
	}
	return v
}

// learnRefs records the real value of every "ref" (and background "job" id) the docs
// show at the same place.
func learnRefs(doc, got any, seen map[string]string) {
	d, ok1 := doc.(map[string]any)
	g, ok2 := got.(map[string]any)
	if !ok1 || !ok2 {
		return
	}
	for _, k := range []string{"ref", "job"} {
		if dr, ok := d[k].(string); ok {
			if gr, ok := g[k].(string); ok {
				seen[dr] = gr
			}
		}
	}
}

// shapeDiff lists where got differs from doc in shape: keys missing or extra, a value of
// another kind, an array whose first element differs.
func shapeDiff(doc, got any, path string) []string {
	switch d := doc.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: documented an object, got %s", path, kind(got))}
		}
		var out []string
		keys := make([]string, 0, len(d)+len(g))
		for k := range d {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := d[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			dv, inDoc := d[k]
			gv, inGot := g[k]
			switch {
			case !inGot:
				out = append(out, fmt.Sprintf("%s.%s: documented, not in the result", path, k))
			case !inDoc:
				out = append(out, fmt.Sprintf("%s.%s: in the result, not documented", path, k))
			default:
				out = append(out, shapeDiff(dv, gv, path+"."+k)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: documented an array, got %s", path, kind(got))}
		}
		if len(d) > 0 && len(g) > 0 {
			return shapeDiff(d[0], g[0], path+"[0]")
		}
		return nil
	}
	if kind(doc) != kind(got) {
		return []string{fmt.Sprintf("%s: documented a %s, got a %s", path, kind(doc), kind(got))}
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
