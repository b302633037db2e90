package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// A textual edit of one TOML table and its subtables ([mcp_servers.relay],
// [mcp_servers.relay.env], …): a real TOML parser finds where each table
// starts and ends (quoted keys, multi-line strings and escapes included), the
// lines of those tables are replaced or removed, and every other byte of the
// file is kept, comments included. The decoded file before and after must
// differ in relay's table only.

// tomlExpr is one top-level expression of a document: a [table] or
// [[array]] header, or a key/value line.
type tomlExpr struct {
	kind       unstable.Kind
	key        []string // the header's name, or the key/value's (dotted) key
	start, end int      // byte span: line start to the end of its line (newline included)
}

// tomlExprs parses doc and returns its top-level expressions in order.
func tomlExprs(doc []byte) ([]tomlExpr, error) {
	var p unstable.Parser
	p.Reset(doc)
	var out []tomlExpr
	for p.NextExpression() {
		n := p.Expression()
		e := tomlExpr{kind: n.Kind}
		first := -1
		last := 0
		it := n.Key()
		for it.Next() {
			k := it.Node()
			e.key = append(e.key, string(k.Data))
			if first < 0 {
				first = int(k.Raw.Offset)
			}
			last = int(k.Raw.Offset + k.Raw.Length)
		}
		if n.Kind == unstable.KeyValue {
			first = int(n.Raw.Offset)
			last = int(n.Raw.Offset + n.Raw.Length)
		}
		if first < 0 {
			continue
		}
		e.start = bytes.LastIndexByte(doc[:first], '\n') + 1
		if nl := bytes.IndexByte(doc[last:], '\n'); nl >= 0 {
			e.end = last + nl + 1
		} else {
			e.end = len(doc)
		}
		out = append(out, e)
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return out, nil
}

// tableSpans returns the byte spans of the table and its subtables: from the
// header to the end of its last key line (trailing blank and comment lines
// belong to whatever follows). Adjacent spans are joined.
func tableSpans(doc []byte, table []string) ([][2]int, error) {
	exprs, err := tomlExprs(doc)
	if err != nil {
		return nil, err
	}
	var spans [][2]int
	for i := 0; i < len(exprs); i++ {
		e := exprs[i]
		if e.kind != unstable.Table && e.kind != unstable.ArrayTable || len(e.key) < len(table) || !slices.Equal(e.key[:len(table)], table) {
			continue
		}
		start, end := e.start, e.end
		j := i + 1
		for ; j < len(exprs) && exprs[j].kind == unstable.KeyValue; j++ {
			end = exprs[j].end
		}
		if n := len(spans); n > 0 && len(bytes.TrimSpace(doc[spans[n-1][1]:start])) == 0 {
			spans[n-1][1] = end // a subtable right after its table: one span
		} else {
			spans = append(spans, [2]int{start, end})
		}
		i = j - 1
	}
	return spans, nil
}

func decodeTOML(b []byte) (map[string]any, error) {
	v := map[string]any{}
	if err := toml.Unmarshal(b, &v); err != nil {
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

// withoutTable returns a deep-enough copy of v with the table at path
// removed, and a parent left empty by that removal removed too.
func withoutTable(v map[string]any, path []string) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = x
	}
	if len(path) == 0 {
		return out
	}
	if len(path) == 1 {
		delete(out, path[0])
		return out
	}
	sub, ok := out[path[0]].(map[string]any)
	if !ok {
		return out
	}
	rest := withoutTable(sub, path[1:])
	if len(rest) == 0 {
		delete(out, path[0])
	} else {
		out[path[0]] = rest
	}
	return out
}

// sameExceptTable reports whether a and b hold the same values once the table
// at path is left out of both: the edit touched nothing else.
func sameExceptTable(a, b map[string]any, path []string) bool {
	return reflect.DeepEqual(withoutTable(a, path), withoutTable(b, path))
}

// SetTOMLTable writes block (a [table] and its subtables, newline-terminated)
// in place of table's existing lines, or at the end of the file.
func SetTOMLTable(doc []byte, table, block string) ([]byte, error) {
	parsed, err := decodeTOML(doc)
	if err != nil {
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	path := strings.Split(table, ".")
	spans, err := tableSpans(doc, path)
	if err != nil {
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	if _, defined := tomlTable(parsed, path...); defined && len(spans) == 0 {
		return nil, fmt.Errorf("%s is defined inline or with dotted keys; relay edits only a [%s] table", table, table)
	}
	if _, isTable := tomlTable(parsed, path...); !isTable && lookup(parsed, path) {
		return nil, fmt.Errorf("%s is not a table; fix it by hand", table)
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
	after, err := decodeTOML(out)
	if err != nil {
		return nil, fmt.Errorf("the edit would make the file invalid TOML (%v); fix the file by hand", err)
	}
	if !sameExceptTable(parsed, after, path) {
		return nil, errors.New("the edit would change more than relay's table; fix the file by hand")
	}
	return out, nil
}

// lookup reports whether path names any value in v.
func lookup(v map[string]any, path []string) bool {
	cur := any(v)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[p]; !ok {
			return false
		}
	}
	return true
}

// DeleteTOMLTable removes table and its subtables, and the blank line
// SetTOMLTable put before it at the end of a file.
func DeleteTOMLTable(doc []byte, table string) ([]byte, bool, error) {
	parsed, err := decodeTOML(doc)
	if err != nil {
		return nil, false, fmt.Errorf("not valid TOML: %w", err)
	}
	path := strings.Split(table, ".")
	spans, err := tableSpans(doc, path)
	if err != nil {
		return nil, false, fmt.Errorf("not valid TOML: %w", err)
	}
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
	after, err := decodeTOML(out)
	if err != nil {
		return nil, false, fmt.Errorf("removing [%s] would leave invalid TOML (%v); fix the file by hand", table, err)
	}
	if lookup(after, path) || !sameExceptTable(parsed, after, path) {
		return nil, false, fmt.Errorf("removing [%s] would change more than relay's table; fix the file by hand", table)
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
