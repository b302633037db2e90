package statedoc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The header is computed by skimming the raw document instead of decoding it: only the
// few items the header shows are copied, so a 10,000-fact state costs one linear scan.

type span struct{ start, end int }

type scanError struct {
	off int
	msg string
}

func (e *scanError) Error() string { return fmt.Sprintf("state document: byte %d: %s", e.off, e.msg) }

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the offset just past the string whose opening quote is at i.
func skipString(d []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			return 0, &scanError{i, "unterminated string"}
		}
		j += k
		bs := 0
		for p := j - 1; p > i && d[p] == '\\'; p-- {
			bs++
		}
		j++
		if bs%2 == 0 {
			return j, nil
		}
	}
}

// skipValue returns the offset just past the value starting at i (no leading space).
// It checks structure only; values the header copies are validated when compacted.
func skipValue(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, &scanError{i, "unexpected end of document"}
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				j, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, &scanError{i, "unterminated object or array"}
	case ',', ':', '}', ']':
		return 0, &scanError{i, fmt.Sprintf("unexpected %q, want a value", d[i])}
	default:
		j := i
		for j < len(d) {
			switch d[j] {
			case ',', '}', ']', ' ', '\n', '\r', '\t':
				return j, nil
			}
			j++
		}
		return j, nil
	}
}

// eachMember calls fn for every member of the object at s, with the key's raw bytes
// (unquoted, still escaped) and the value's span.
func eachMember(d []byte, s span, fn func(key []byte, v span) error) error {
	i := skipSpace(d, s.start)
	if i >= s.end || d[i] != '{' {
		return &scanError{i, "want an object"}
	}
	i = skipSpace(d, i+1)
	if i < s.end && d[i] == '}' {
		return nil
	}
	for i < s.end {
		if d[i] != '"' {
			return &scanError{i, "want a member name"}
		}
		ks := i
		ke, err := skipString(d, i)
		if err != nil {
			return err
		}
		key := d[ks+1 : ke-1]
		i = skipSpace(d, ke)
		if i >= s.end || d[i] != ':' {
			return &scanError{i, "want ':'"}
		}
		i = skipSpace(d, i+1)
		ve, err := skipValue(d, i)
		if err != nil {
			return err
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = unescapeKey(d[ks:ke])
		}
		if err := fn(key, span{i, ve}); err != nil {
			return err
		}
		i = skipSpace(d, ve)
		if i < s.end && d[i] == ',' {
			i = skipSpace(d, i+1)
			continue
		}
		if i < s.end && d[i] == '}' {
			return nil
		}
		return &scanError{i, "want ',' or '}'"}
	}
	return &scanError{i, "unterminated object"}
}

// unescapeKey decodes a quoted JSON string; on failure it returns the raw text.
func unescapeKey(quoted []byte) []byte {
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return quoted
	}
	return []byte(k)
}

// eachElement calls fn for every element span of the array at s.
func eachElement(d []byte, s span, fn func(v span) error) error {
	i := skipSpace(d, s.start)
	if i >= s.end || d[i] != '[' {
		return &scanError{i, "want an array"}
	}
	i = skipSpace(d, i+1)
	if i < s.end && d[i] == ']' {
		return nil
	}
	for i < s.end {
		ve, err := skipValue(d, i)
		if err != nil {
			return err
		}
		if err := fn(span{i, ve}); err != nil {
			return err
		}
		i = skipSpace(d, ve)
		if i < s.end && d[i] == ',' {
			i = skipSpace(d, i+1)
			continue
		}
		if i < s.end && d[i] == ']' {
			return nil
		}
		return &scanError{i, "want ',' or ']'"}
	}
	return &scanError{i, "unterminated array"}
}

// stringMember returns the decoded string value of member name in the object at s, and
// whether the member exists; a non-string value is returned as its raw JSON text.
func stringMember(d []byte, s span, name string) (string, bool, error) {
	var val string
	found := false
	err := eachMember(d, s, func(key []byte, v span) error {
		if found || string(key) != name {
			return nil
		}
		found = true
		raw := d[v.start:v.end]
		if len(raw) > 0 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			val = string(raw[1 : len(raw)-1])
			return nil
		}
		if err := json.Unmarshal(raw, &val); err != nil {
			val = string(raw)
		}
		return nil
	})
	return val, found, err
}
