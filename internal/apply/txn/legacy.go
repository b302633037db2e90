package txn

import (
	"bytes"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Records that relay wrote before it double-quoted texts starting with white space hold a
// text whose first line starts with a tab (a Makefile, an indented snippet) as a literal
// block yaml.v3 wrote but cannot read back ("found a tab character where an indentation
// space is expected"): it takes the tab for indentation. Such a change was applied but
// could not be listed or reverted. unmarshalLegacy reads those records: each such block
// gets the indentation indicator for the indentation yaml.v3 wrote its lines at, so the
// same text is read, tab included.
//
// By hand: it mends the one construct yaml.v3 gets wrong in its own output, and keeps the
// mended record only if the parser confirms that every line it changed is the header of
// a literal block.

// errNoLegacyMend: the record has no literal block this mends.
var errNoLegacyMend = errors.New("no literal block starting with a tab to mend")

// unmarshalLegacy reads a record yaml.v3 could not, after indentTabBlocks.
func unmarshalLegacy(b []byte) (*State, error) {
	fixed, changed := indentTabBlocks(b)
	if len(changed) == 0 {
		return nil, errNoLegacyMend
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(fixed, &doc); err != nil {
		return nil, err
	}
	headers := map[int]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Style&yaml.LiteralStyle != 0 {
			headers[n.Line-1] = true
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	for _, i := range changed {
		if !headers[i] {
			return nil, errors.New("a mended line is not a literal block's header")
		}
	}
	var s State
	if err := doc.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// indentTabBlocks returns b with an indentation indicator given to every literal block
// header that has none and whose first line starts with a tab after its indentation, and
// the (0-based) numbers of the lines it changed. Lines inside a block are its text, never
// headers.
func indentTabBlocks(b []byte) (fixed []byte, changed []int) {
	lines := bytes.SplitAfter(b, []byte("\n"))
	inBlock, blockParent := false, 0
	for i, raw := range lines {
		line := strings.TrimRight(string(raw), "\r\n")
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if inBlock && (indent == len(line) || indent > blockParent) {
			continue // the block's text (or a blank line in it)
		}
		inBlock = false
		parent, head, indicators, style, ok := blockHeader(line)
		if !ok {
			continue
		}
		inBlock, blockParent = true, parent
		if style != '|' || strings.ContainsAny(indicators, "123456789") || i+1 == len(lines) {
			continue
		}
		next := strings.TrimRight(string(lines[i+1]), "\r\n")
		first := len(next) - len(strings.TrimLeft(next, " "))
		if first >= len(next) || next[first] != '\t' {
			continue
		}
		n := first - parent
		if n < 1 || n > 9 {
			continue // not a layout yaml.v3 writes
		}
		lines[i] = []byte(head + "|" + string(rune('0'+n)) + indicators + "\n")
		changed = append(changed, i)
	}
	if len(changed) == 0 {
		return b, nil
	}
	return bytes.Join(lines, nil), changed
}

// blockHeader reports whether line ends a mapping value or a sequence entry with a block
// scalar indicator ("key: |", "- >-", "  - k: |2+"). It returns the column its block is
// indented from (the key's, or the entry's dash for a bare entry), the line up to the
// indicator, the indicators after it (chomping, indentation) and the style ('|' or '>').
func blockHeader(line string) (parent int, head, indicators string, style byte, ok bool) {
	at := strings.LastIndexAny(line, "|>")
	if at < 1 || line[at-1] != ' ' || strings.Trim(line[at+1:], "+-123456789") != "" || len(line)-at > 3 {
		return 0, "", "", 0, false
	}
	head, indicators, style = line[:at], line[at+1:], line[at]
	col, dash := 0, -1
	for col < len(head) {
		switch {
		case head[col] == ' ':
			col++
		case strings.HasPrefix(head[col:], "- "):
			dash = col
			col += 2
		default:
			if !strings.HasSuffix(head, ": ") {
				return 0, "", "", 0, false
			}
			return col, head, indicators, style, true // "key: |": indented from the key
		}
	}
	if dash < 0 {
		return 0, "", "", 0, false
	}
	return dash, head, indicators, style, true // "- |": indented from the entry's dash
}
