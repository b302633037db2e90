package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// toolCall is one edit tool call as agents write it: Claude Code's Edit,
// MultiEdit and Write, Anthropic's str_replace_editor, or a wrapper that
// names the tool and holds its input.
type toolCall struct {
	FilePath   *string `json:"file_path"`
	Path       *string `json:"path"`
	Old        *string `json:"old_string"`
	New        *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
	Edits      []struct {
		Old        *string `json:"old_string"`
		New        *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	} `json:"edits"`
	Content    *string `json:"content"`
	Command    string  `json:"command"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	InsertText *string `json:"insert_text"`
	// Wrappers: {"name": "Edit", "input": {...}} and the like.
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
	ToolInput  json.RawMessage `json:"tool_input"`
}

// maxToolDepth bounds how deep wrappers may nest.
const maxToolDepth = 4

// isToolJSON reports whether a block body is JSON edit tool calls.
func isToolJSON(body []string) bool {
	first := ""
	for _, l := range body {
		if !isBlank(l) {
			first = strings.TrimSpace(l)
			break
		}
	}
	if !strings.HasPrefix(first, "{") && !strings.HasPrefix(first, "[") {
		return false
	}
	text := strings.Join(body, "\n")
	if !strings.Contains(text, `"old_string"`) && !strings.Contains(text, `"command"`) && !strings.Contains(text, `"file_path"`) {
		return false
	}
	_, err := toolOps([]byte(text))
	return err == nil
}

// editOps reads JSON edit tool calls: fenced ```json blocks, or the whole
// answer when it is JSON. Edits of one file become one operation.
func (a *answerText) editOps() ([]Operation, int, error) {
	var ops []Operation
	first := -1
	segs := a.segments()
	if len(a.fences) == 0 && len(segs) == 1 {
		t := strings.TrimSpace(segs[0].src.text)
		if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
			return nil, 0, nil
		}
		fo, err := toolOps([]byte(t))
		if err != nil {
			return nil, 0, err
		}
		a.use(0, len(a.lines))
		return fo, 1, nil
	}
	for _, s := range segs {
		if !s.fenced || bodyKind(s.body) != FormatEdit {
			continue
		}
		fo, err := toolOps([]byte(s.sub(0, len(s.body))))
		if err != nil {
			return nil, 0, decisiveError{fmt.Errorf("the JSON block at line %d: %w", s.open+1, err)}
		}
		if first < 0 {
			first = s.open + 1
		}
		ops = append(ops, fo...)
		a.useFence(s)
	}
	return ops, first, nil
}

// toolOps decodes one or more JSON values (objects, lists of them, JSON
// Lines) into operations; edits of one file in a row are one operation.
func toolOps(data []byte) ([]Operation, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var calls []toolCall
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &FormatError{Format: FormatEdit, Reason: "not valid JSON: " + err.Error()}
		}
		cs, err := unwrapCalls(raw, 0)
		if err != nil {
			return nil, err
		}
		calls = append(calls, cs...)
	}
	if len(calls) == 0 {
		return nil, &FormatError{Format: FormatEdit, Reason: "no edits in the JSON"}
	}
	var ops []Operation
	var edits []Edit
	cur := ""
	flush := func() error {
		if len(edits) == 0 {
			return nil
		}
		body, err := json.Marshal(edits)
		if err != nil {
			return err
		}
		ops = append(ops, Operation{Kind: OpWrite, Path: cur, Strategy: EditStrategy, Content: string(body), Create: len(edits) == 1 && edits[0].OldString == "" && edits[0].InsertLine == nil})
		edits = nil
		return nil
	}
	for n, c := range calls {
		p, es, whole, err := c.resolve(n + 1)
		if err != nil {
			return nil, err
		}
		if p != cur || whole != nil {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		cur = p
		if whole != nil {
			ops = append(ops, *whole)
			continue
		}
		edits = append(edits, es...)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return ops, nil
}

// unwrapCalls turns one JSON value into tool calls: a list, a wrapper, or a call.
func unwrapCalls(raw json.RawMessage, depth int) ([]toolCall, error) {
	if depth > maxToolDepth {
		return nil, &FormatError{Format: FormatEdit, Reason: "tool calls nested too deep"}
	}
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(t, &list); err != nil {
			return nil, &FormatError{Format: FormatEdit, Reason: "not valid JSON: " + err.Error()}
		}
		var out []toolCall
		for _, r := range list {
			cs, err := unwrapCalls(r, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
		return out, nil
	}
	if len(t) > 0 && t[0] == '"' && depth > 0 {
		// OpenAI-style "arguments" hold the call as a JSON string.
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, &FormatError{Format: FormatEdit, Reason: "not valid JSON: " + err.Error()}
		}
		return unwrapCalls(json.RawMessage(s), depth+1)
	}
	var c toolCall
	if err := json.Unmarshal(t, &c); err != nil {
		return nil, &FormatError{Format: FormatEdit, Reason: "not an edit: " + err.Error()}
	}
	for _, inner := range []json.RawMessage{c.Input, c.Arguments, c.Parameters, c.ToolInput} {
		if len(bytes.TrimSpace(inner)) > 0 && c.Old == nil && c.Command == "" {
			return unwrapCalls(inner, depth+1)
		}
	}
	return []toolCall{c}, nil
}

// resolve reads one call: the file, and its edits or whole-file write.
func (c toolCall) resolve(n int) (string, []Edit, *Operation, error) {
	fail := func(format string, args ...any) (string, []Edit, *Operation, error) {
		return "", nil, nil, decisiveError{&FormatError{Format: FormatEdit, Reason: fmt.Sprintf("call %d: ", n) + fmt.Sprintf(format, args...)}}
	}
	raw := ""
	switch {
	case c.FilePath != nil:
		raw = *c.FilePath
	case c.Path != nil:
		raw = *c.Path
	}
	p := cleanPath(raw)
	if !validPath(p) {
		return fail("names no file (file_path or path)")
	}
	switch c.Command {
	case "":
	case "create":
		if c.FileText == nil {
			return fail("create needs file_text")
		}
		// create never overwrites: an empty old_string only writes an empty or new file.
		return p, []Edit{{OldString: "", NewString: *c.FileText}}, nil, nil
	case "str_replace":
		if c.OldStr == nil {
			return fail("str_replace needs old_str")
		}
		nw := ""
		if c.NewStr != nil {
			nw = *c.NewStr
		}
		if *c.OldStr == "" {
			return fail("str_replace needs a non-empty old_str")
		}
		return p, []Edit{{OldString: *c.OldStr, NewString: nw}}, nil, nil
	case "insert":
		text := c.NewStr
		if text == nil {
			text = c.InsertText
		}
		if c.InsertLine == nil || text == nil {
			return fail("insert needs insert_line and new_str")
		}
		return p, []Edit{{NewString: *text, InsertLine: c.InsertLine}}, nil, nil
	case "view", "undo_edit":
		return fail("%s changes nothing relay can apply", c.Command)
	default:
		return fail("unknown command %q (create, str_replace and insert change files)", c.Command)
	}
	switch {
	case len(c.Edits) > 0:
		var es []Edit
		for i, e := range c.Edits {
			if e.Old == nil || e.New == nil {
				return fail("edit %d needs old_string and new_string", i+1)
			}
			es = append(es, Edit{OldString: *e.Old, NewString: *e.New, ReplaceAll: e.ReplaceAll})
		}
		return p, es, nil, nil
	case c.Old != nil || c.New != nil:
		if c.Old == nil || c.New == nil {
			return fail("needs both old_string and new_string")
		}
		return p, []Edit{{OldString: *c.Old, NewString: *c.New, ReplaceAll: c.ReplaceAll}}, nil, nil
	case c.Content != nil:
		// Claude Code's Write: the whole file.
		return p, nil, &Operation{Kind: OpWrite, Path: p, Strategy: Replace, Content: *c.Content}, nil
	}
	return fail("holds no old_string/new_string, edits, content or command")
}
