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
// Short strings (most keys and values) are walked byte by byte, which beats a call to
// bytes.IndexByte per string; long ones use IndexByte's vectorised search.
func skipString(d []byte, i int) (int, error) {
	j := i + 1
	for n := 0; n < 32 && j < len(d); n++ {
		switch d[j] {
		case '"':
			return j + 1, nil
		case '\\':
			j += 2
		default:
			j++
		}
	}
	for j < len(d) {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		if e := bytes.IndexByte(d[j:q], '\\'); e < 0 {
			return q + 1, nil
		} else {
			j += e + 2 // skip the escaped character and search again
		}
	}
	return 0, &scanError{i, "unterminated string"}
}

// Byte classes for skipContainer's table-driven loop.
const (
	cOther = iota
	cQuote
	cOpen
	cClose
)

var structClass = func() (t [256]uint8) {
	t['"'] = cQuote
	t['{'], t['['] = cOpen, cOpen
	t['}'], t[']'] = cClose, cClose
	return
}()

// inString marks the bytes that end a run of plain string content.
var inString = func() (t [256]bool) {
	t['"'], t['\\'] = true, true
	return
}()

// skipContainer returns the offset just past the object or array opening at i. It is the
// hot loop of Header on big states, hence one table lookup per byte and no calls.
func skipContainer(d []byte, i int) (int, error) {
	start := i
	depth := 0
	n := len(d)
	for i < n {
		switch structClass[d[i]] {
		case cOther:
			i++
		case cQuote:
			i++
			for i < n && !inString[d[i]] {
				i++
			}
			for i < n && d[i] == '\\' {
				i += 2
				for i < n && !inString[d[i]] {
					i++
				}
			}
			if i >= n {
				return 0, &scanError{start, "unterminated string"}
			}
			i++ // closing quote
		case cOpen:
			depth++
			i++
		case cClose:
			depth--
			i++
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, &scanError{start, "unterminated object or array"}
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
		return skipContainer(d, i)
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

// eachMember calls fn for every member of the object at s with the decoded key and the
// offset where its value starts; fn returns the offset just past the value, so a caller
// can walk into a value instead of skipping it first and walking it again.
func eachMember(d []byte, s span, fn func(key []byte, start int) (int, error)) error {
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
		if bytes.IndexByte(key, '\\') >= 0 {
			key = unescapeKey(d[ks:ke])
		}
		ve, err := fn(key, i)
		if err != nil {
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

// eachElement calls fn for every element span of the array starting at start and returns
// the offset just past the array.
func eachElement(d []byte, start int, fn func(v span) error) (int, error) {
	i := start
	if i >= len(d) || d[i] != '[' {
		return 0, &scanError{i, "want an array"}
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for i < len(d) {
		ve, err := skipValue(d, i)
		if err != nil {
			return 0, err
		}
		if err := fn(span{i, ve}); err != nil {
			return 0, err
		}
		i = skipSpace(d, ve)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
			continue
		}
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		return 0, &scanError{i, "want ',' or ']'"}
	}
	return 0, &scanError{i, "unterminated array"}
}

// stringMember returns the decoded string value of member name in the object at s, and
// whether the member exists; a non-string value is returned as its raw JSON text.
func stringMember(d []byte, s span, name string) (string, bool, error) {
	var val string
	found := false
	err := eachMember(d, s, func(key []byte, start int) (int, error) {
		end, err := skipValue(d, start)
		if err != nil || found || string(key) != name {
			return end, err
		}
		found = true
		raw := d[start:end]
		if len(raw) > 0 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			val = string(raw[1 : len(raw)-1])
			return end, nil
		}
		if err := json.Unmarshal(raw, &val); err != nil {
			val = string(raw)
		}
		return end, nil
	})
	return val, found, err
}
