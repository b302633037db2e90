package jsonpatch

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Encode returns the compact JSON text of v (a value of the model, or plain Go maps,
// slices, strings, bools, numbers and json.Number). Object members keep their order;
// Go map keys are sorted.
func Encode(v any) ([]byte, error) { return AppendJSON(nil, v) }

// AppendJSON appends the compact JSON text of v to buf.
func AppendJSON(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		if t {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case string:
		return appendString(buf, t), nil
	case json.Number:
		if !validNumber(string(t)) {
			return buf, fmt.Errorf("invalid number literal %q", string(t))
		}
		return append(buf, t...), nil
	case int:
		return strconv.AppendInt(buf, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(buf, t, 10), nil
	case uint64:
		return strconv.AppendUint(buf, t, 10), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return buf, fmt.Errorf("cannot encode %v as JSON", t)
		}
		return strconv.AppendFloat(buf, t, 'g', -1, 64), nil
	case []any:
		buf = append(buf, '[')
		for i, x := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = AppendJSON(buf, x); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	case *Object:
		buf = append(buf, '{')
		for i, k := range t.keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = AppendJSON(buf, t.vals[i]); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = AppendJSON(buf, t[k]); err != nil {
				return buf, err
			}
		}
		return append(buf, '}'), nil
	default:
		return buf, fmt.Errorf("cannot encode a Go %T as JSON", v)
	}
}

const hexDigits = "0123456789abcdef"

// plainByte marks ASCII bytes that appear unescaped in a JSON string.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD, as in encoding/json.
// HTML characters are not escaped: this JSON is data, not a web page.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	d := decoder{data: []byte(s), src: s}
	if len(s) == 0 {
		return false
	}
	if c := s[0]; c != '-' && (c < '0' || c > '9') {
		return false
	}
	_, err := d.number()
	return err == nil && d.pos == len(s)
}
