package hosts

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// A textual edit of one TOML table and its subtables ([mcp_servers.relay],
// [mcp_servers.relay.env], …): the lines of those tables are replaced or
// removed and every other line of the file is kept byte for byte, comments
// included. A decoder only checks the file before and after.

type tomlLine struct {
	start, end int    // byte span including the newline
	header     string // normalized table name for a [table] line, else ""
	content    bool   // a key/value line (not blank, not a comment)
}

func tomlLines(b []byte) []tomlLine {
	var out []tomlLine
	inMulti := "" // the delimiter of an open multi-line string
	for start := 0; start < len(b); {
		end := bytes.IndexByte(b[start:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += start + 1
		}
		raw := string(b[start:end])
		t := strings.TrimSpace(raw)
		l := tomlLine{start: start, end: end}
		if inMulti != "" {
			l.content = true
			if strings.Count(t, inMulti)%2 == 1 {
				inMulti = ""
			}
		} else {
			switch {
			case strings.HasPrefix(t, "["):
				l.header = normalizeHeader(t)
			case t != "" && !strings.HasPrefix(t, "#"):
				l.content = true
				for _, d := range []string{`"""`, "'''"} {
					if strings.Count(t, d)%2 == 1 {
						inMulti = d
					}
				}
			}
		}
		out = append(out, l)
		start = end
	}
	return out
}

// normalizeHeader turns `[ mcp_servers . "relay" ] # x` into mcp_servers.relay;
// array tables keep their double brackets.
func normalizeHeader(t string) string {
	array := strings.HasPrefix(t, "[[")
	end := strings.Index(t, "]")
	if end < 0 {
		return t
	}
	inner := strings.TrimPrefix(t[:end], "[")
	inner = strings.TrimPrefix(inner, "[")
	var parts []string
	for _, p := range strings.Split(inner, ".") {
		p = strings.TrimSpace(p)
		p = strings.Trim(p, `"'`)
		parts = append(parts, p)
	}
	name := strings.Join(parts, ".")
	if array {
		return "[[" + name
	}
	return name
}

// tableSpans returns the byte spans of the table and its subtables: from the
// header to its last key line (trailing blank and comment lines belong to
// whatever follows).
func tableSpans(b []byte, table string) [][2]int {
	lines := tomlLines(b)
	var spans [][2]int
	for i := 0; i < len(lines); i++ {
		h := lines[i].header
		if h != table && !strings.HasPrefix(h, table+".") {
			continue
		}
		start, end := lines[i].start, lines[i].end
		j := i + 1
		for ; j < len(lines) && lines[j].header == ""; j++ {
			if lines[j].content {
				end = lines[j].end
			}
		}
		if n := len(spans); n > 0 && len(bytes.TrimSpace(b[spans[n-1][1]:start])) == 0 {
			spans[n-1][1] = end // a subtable right after its table: one span
		} else {
			spans = append(spans, [2]int{start, end})
		}
		i = j - 1
	}
	return spans
}

func decodeTOML(b []byte) (map[string]any, error) {
	var v map[string]any
	if _, err := toml.Decode(string(b), &v); err != nil {
		return nil, err
	}
	return v, nil
}

func tomlTable(v map[string]any, path ...string) (map[string]any, bool) {
	cur := v
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// SetTOMLTable writes block (a [table] and its subtables, newline-terminated)
// in place of table's existing lines, or at the end of the file.
func SetTOMLTable(doc []byte, table, block string) ([]byte, error) {
	parsed, err := decodeTOML(doc)
	if err != nil {
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	spans := tableSpans(doc, table)
	path := strings.Split(table, ".")
	if _, defined := tomlTable(parsed, path...); defined && len(spans) == 0 {
		return nil, fmt.Errorf("%s is defined inline or with dotted keys; relay edits only a [%s] table", table, table)
	}
	var out []byte
	if len(spans) == 0 {
		out = append(out, doc...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		if len(bytes.TrimSpace(out)) > 0 {
			out = append(out, '\n')
		}
		out = append(out, block...)
	} else {
		// the first span takes the new block; later subtable spans go
		out = append(out, doc[:spans[0][0]]...)
		out = append(out, block...)
		prev := spans[0][1]
		for _, sp := range spans[1:] {
			out = append(out, doc[prev:sp[0]]...)
			prev = sp[1]
		}
		out = append(out, doc[prev:]...)
	}
	if _, err := decodeTOML(out); err != nil {
		return nil, fmt.Errorf("the edit would make the file invalid TOML (%v); fix the file by hand", err)
	}
	return out, nil
}

// DeleteTOMLTable removes table and its subtables, and the blank line
// SetTOMLTable put before it at the end of a file.
func DeleteTOMLTable(doc []byte, table string) ([]byte, bool, error) {
	spans := tableSpans(doc, table)
	if len(spans) == 0 {
		return doc, false, nil
	}
	var out []byte
	prev := 0
	for _, sp := range spans {
		from := sp[0]
		rest := bytes.TrimSpace(doc[sp[1]:])
		// at the end of the file, take the separating blank line too
		if len(rest) == 0 && from >= 2 && doc[from-1] == '\n' && doc[from-2] == '\n' && from-1 >= prev {
			from--
		}
		out = append(out, doc[prev:from]...)
		prev = sp[1]
	}
	out = append(out, doc[prev:]...)
	if _, err := decodeTOML(out); err != nil {
		return nil, false, fmt.Errorf("removing [%s] would leave invalid TOML (%v); fix the file by hand", table, err)
	}
	return out, true, nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
