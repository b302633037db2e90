package jsonpatch

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON Pointer: its reference tokens, already unescaped.
// The empty Pointer refers to the whole document.
type Pointer []string

// ParsePointer parses the JSON-string representation of a pointer: "" or "/a/b~1c/0".
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("invalid JSON pointer %q: it must be empty or start with '/'", s)
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		if !strings.Contains(p, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(p); j++ {
			if p[j] != '~' {
				b.WriteByte(p[j])
				continue
			}
			if j+1 < len(p) && p[j+1] == '0' {
				b.WriteByte('~')
			} else if j+1 < len(p) && p[j+1] == '1' {
				b.WriteByte('/')
			} else {
				return nil, fmt.Errorf("invalid JSON pointer %q: '~' must be followed by '0' or '1' (write ~0 for '~', ~1 for '/')", s)
			}
			j++
		}
		parts[i] = b.String()
	}
	return Pointer(parts), nil
}

// ParseFragment parses the URI fragment representation of a pointer (RFC 6901 §6): "#/a%20b".
func ParseFragment(s string) (Pointer, error) {
	if !strings.HasPrefix(s, "#") {
		return nil, fmt.Errorf("invalid JSON pointer fragment %q: it must start with '#'", s)
	}
	dec, err := url.PathUnescape(s[1:])
	if err != nil {
		return nil, fmt.Errorf("invalid JSON pointer fragment %q: %v", s, err)
	}
	return ParsePointer(dec)
}

// String returns the JSON-string representation of p.
func (p Pointer) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// Append returns p extended by token t (p itself is not modified).
func (p Pointer) Append(t string) Pointer {
	q := make(Pointer, len(p), len(p)+1)
	copy(q, p)
	return append(q, t)
}

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}

// isPrefixOf reports whether p is a proper prefix of q.
func (p Pointer) isPrefixOf(q Pointer) bool {
	if len(p) >= len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

func (p Pointer) equal(q Pointer) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Get returns the value p refers to in doc. doc may come from Decode or from encoding/json
// (map[string]any objects).
func (p Pointer) Get(doc any) (any, error) {
	cur := doc
	for i, tok := range p {
		switch c := cur.(type) {
		case *Object:
			v, ok := c.Get(tok)
			if !ok {
				return nil, fmt.Errorf("no member %q at %s", tok, p[:i].where())
			}
			cur = v
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q at %s", tok, p[:i].where())
			}
			cur = v
		case []any:
			idx, err := arrayIndex(tok, len(c), false)
			if err != nil {
				return nil, fmt.Errorf("%v at %s", err, p[:i].where())
			}
			cur = c[idx]
		default:
			return nil, fmt.Errorf("%s is a %s, not an object or array", p[:i].where(), kindOf(cur))
		}
	}
	return cur, nil
}

// where names a location for messages: "the document root" or "/a/b".
func (p Pointer) where() string {
	if len(p) == 0 {
		return "the document root"
	}
	return strconv.Quote(p.String())
}

// arrayIndex parses an array index token per RFC 6901: "0" or digits without a leading zero.
// With forInsert, the index may equal n (one past the end) and "-" means n.
func arrayIndex(tok string, n int, forInsert bool) (int, error) {
	if tok == "-" {
		if forInsert {
			return n, nil
		}
		return 0, fmt.Errorf(`index "-" (past the end of the array) names no element`)
	}
	bad := tok == "" || (len(tok) > 1 && tok[0] == '0')
	for i := 0; i < len(tok); i++ {
		bad = bad || tok[i] < '0' || tok[i] > '9'
	}
	if bad {
		want := "0 or a number without leading zeros"
		if forInsert {
			want += `, or "-" to append`
		}
		return 0, fmt.Errorf("%q is not an array index (want %s)", tok, want)
	}
	idx, err := strconv.Atoi(tok)
	max := n - 1
	if forInsert {
		max = n
	}
	if err != nil || idx > max {
		return 0, fmt.Errorf("array index %s out of range (array has %d elements)", tok, n)
	}
	return idx, nil
}
