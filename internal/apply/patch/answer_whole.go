package patch

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// elisionRe matches the text of a comment that stands for code left out
// ("... existing code ...", "rest of the file unchanged"): a block holding one
// is a snippet, and writing it as the whole file would delete that code.
var elisionRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(\.\.\.|…|\[\.\.\.\])|^(the )?(rest of|remaining|existing|other|previous|unchanged|omitted|same as)\b.*\b(code|file|methods?|functions?|imports?|content|implementation|lines?|unchanged|same|before|here)\b`)
})

// wholeOps reads fenced blocks that name their file, by the info string
// (` ```ts src/a.ts `, relay's ` ```ts // src/a.ts `) or on the line before
// the fence, as the whole new content of that file. A block without a path is
// code shown, not a change: it never writes a file. Cline's and Roo's
// `<write_to_file>` (`<path>`, then `<content>`) counts too.
func (a *answerText) wholeOps() ([]Operation, int, error) {
	var ops []Operation
	first := -1
	for _, s := range a.segments() {
		if !s.fenced {
			fo, err := a.xmlWrites(s)
			if err != nil {
				return nil, 0, err
			}
			if len(fo) > 0 && first < 0 {
				first = s.open + 2
			}
			ops = append(ops, fo...)
			continue
		}
		if bodyKind(s.body) != FormatWhole || len(s.body) == 0 {
			continue
		}
		p := pathFromInfo(s.info)
		if p == "" {
			p, _ = a.pathBefore(s.open, 0, 2)
		}
		if p == "" {
			if len(s.body) > 0 {
				a.ignore(s, "no file path in the info string or on the line before it (code alone never writes a file)")
			}
			continue
		}
		if s.close >= len(a.lines) {
			return nil, 0, &CutOffError{Reason: fmt.Sprintf("the code block for %s at line %d is never closed", p, s.open+1)}
		}
		if isDeleteBody(s.body) {
			ops = append(ops, Operation{Kind: OpDelete, Path: p})
			a.useFence(s)
			continue
		}
		if i := elided(s.body); i >= 0 {
			return nil, 0, decisiveError{&FormatError{Format: FormatWhole, Reason: fmt.Sprintf("the block for %s leaves code out at line %d (%q): it is a snippet, and writing it as the whole file would delete that code; send a diff or SEARCH/REPLACE blocks", p, s.line(i)+1, clip(s.body[i]))}}
		}
		content := replaceContent(s.fence, p)
		ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: content})
		if first < 0 {
			first = s.open + 1
		}
		a.useFence(s)
	}
	return ops, first, nil
}

// elided returns the first line that is a comment standing for code left
// out, or -1. A line of only "..." is code in Python, so a comment is needed.
func elided(body []string) int {
	for i, l := range body {
		t := strings.TrimSpace(l)
		tok := ""
		for _, c := range []string{"{/*", "<!--", "//", "/*", "#", "--", ";", "*"} {
			if strings.HasPrefix(t, c) {
				tok = c
				break
			}
		}
		if tok == "" {
			continue
		}
		t = strings.TrimSpace(t[len(tok):])
		for _, end := range []string{"*/}", "-->", "*/"} {
			t = strings.TrimSpace(strings.TrimSuffix(t, end))
		}
		if t != "" && elisionRe().MatchString(t) {
			return i
		}
	}
	return -1
}

// xmlWrites reads `<path>p</path>` followed by `<content>…</content>` in
// unfenced text (Cline's and Roo's write_to_file).
func (a *answerText) xmlWrites(s segment) ([]Operation, error) {
	var ops []Operation
	p := ""
	for i := 0; i < len(s.body); i++ {
		t := strings.TrimSpace(s.body[i])
		if strings.HasPrefix(t, "<path>") {
			p = pathFromLine(t)
			continue
		}
		if p == "" || !strings.HasPrefix(t, "<content>") {
			continue
		}
		end := -1
		for j := i; j < len(s.body); j++ {
			if strings.Contains(s.body[j], "</content>") {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, &CutOffError{Reason: fmt.Sprintf("the <content> for %s at line %d never ends", p, s.line(i)+1)}
		}
		// <content> and </content> usually sit on their own lines.
		from, to := i+1, end
		var content string
		if rest := strings.TrimPrefix(t, "<content>"); strings.TrimSpace(rest) != "" || end == i {
			whole := strings.Join(s.body[i:end+1], "\n")
			whole = whole[strings.Index(whole, "<content>")+len("<content>") : strings.LastIndex(whole, "</content>")]
			content = strings.TrimPrefix(whole, "\n")
			if content != "" && !strings.HasSuffix(content, "\n") {
				content += "\n"
			}
		} else {
			content = s.sub(from, to)
			if strings.TrimSpace(s.body[end]) != "</content>" {
				content += strings.TrimSuffix(s.body[end], "</content>") + "\n"
			}
		}
		if k := elided(strings.Split(content, "\n")); k >= 0 {
			return nil, decisiveError{&FormatError{Format: FormatWhole, Reason: fmt.Sprintf("the content for %s leaves code out (%q): it is a snippet, not the whole file", p, clip(strings.Split(content, "\n")[k]))}}
		}
		ops = append(ops, Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: content})
		a.use(s.line(i), s.line(end+1))
		p = ""
		i = end
	}
	return ops, nil
}
