package jsonpatch

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting so hostile input cannot exhaust the stack.
const MaxDepth = 10000

// SyntaxError reports malformed JSON and the byte offset where it was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Decode parses one JSON value into the order-preserving value model. Numbers keep their
// literal text, duplicate member names are an error, and so is trailing data.
func Decode(data []byte) (any, error) {
	// One string copy of the input: strings and numbers without escapes become substrings of
	// it, which saves an allocation per value.
	d := scratchPool.Get().(*decoder)
	d.data, d.src, d.pos, d.depth = data, string(data), 0, 0
	defer func() {
		d.data, d.src = nil, ""
		d.keys, d.vals = d.keys[:0], d.vals[:0]
		if cap(d.vals) <= 1<<16 { // do not pin huge scratch buffers
			scratchPool.Put(d)
		}
	}()
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		clear(d.vals[:cap(d.vals)]) // an error leaves values on the stacks
		clear(d.keys[:cap(d.keys)])
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errf("unexpected %s after the value", d.describe())
	}
	return v, nil
}

// scratchPool reuses decoders so their member stacks do not grow again on every call.
var scratchPool = sync.Pool{New: func() any { return new(decoder) }}

type decoder struct {
	data  []byte
	src   string // the same bytes as data
	pos   int
	depth int
	// Scratch stacks shared by all nesting levels: members are collected here and copied
	// into exactly sized slices when their container closes.
	keys []string
	vals []any
}

func (d *decoder) errf(format string, args ...any) error {
	return &SyntaxError{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) describe() string {
	if d.pos >= len(d.data) {
		return "end of input"
	}
	c := d.data[d.pos]
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errf("unexpected end of input, want a value")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.errf("unexpected %s, want a value", d.describe())
	}
}

func (d *decoder) literal(lit string) error {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return nil
	}
	return d.errf("invalid literal, want %s", lit)
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > MaxDepth {
		return d.errf("nesting deeper than %d levels", MaxDepth)
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++                                 // '{'
	base, vbase := len(d.keys), len(d.vals) // arrays being decoded also use d.vals
	var seen map[string]struct{}            // duplicate check for large objects
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return &Object{}, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errf("unexpected %s, want a member name", d.describe())
		}
		keyPos := d.pos
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		dup := false
		if n := len(d.keys) - base; n < smallObject {
			for _, x := range d.keys[base:] {
				dup = dup || x == k
			}
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*n)
				for _, x := range d.keys[base:] {
					seen[x] = struct{}{}
				}
			}
			_, dup = seen[k]
			seen[k] = struct{}{}
		}
		if dup {
			return nil, &SyntaxError{Offset: keyPos, Msg: fmt.Sprintf("duplicate member name %q", k)}
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errf("unexpected %s, want ':'", d.describe())
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errf("unexpected end of input, want ',' or '}'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			o := &Object{keys: make([]string, len(d.keys)-base), vals: make([]any, len(d.vals)-vbase)}
			copy(o.keys, d.keys[base:])
			copy(o.vals, d.vals[vbase:])
			clear(d.vals[vbase:]) // drop references so pooled scratch does not pin the input
			clear(d.keys[base:])
			d.keys, d.vals = d.keys[:base], d.vals[:vbase]
			o.reindex()
			return o, nil
		default:
			return nil, d.errf("unexpected %s, want ',' or '}'", d.describe())
		}
	}
}

// key decodes a member name.
func (d *decoder) key() (string, error) { return d.str() }

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	base := len(d.vals)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.vals = append(d.vals, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errf("unexpected end of input, want ',' or ']'")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			d.depth--
			a := make([]any, len(d.vals)-base)
			copy(a, d.vals[base:])
			clear(d.vals[base:])
			d.vals = d.vals[:base]
			return a, nil
		default:
			return nil, d.errf("unexpected %s, want ',' or ']'", d.describe())
		}
	}
}

func (d *decoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.pos < len(d.data) && d.data[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return nil, d.errf("invalid number, want a digit")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, d.errf("invalid number, want a digit after '.'")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.errf("invalid number, want a digit in the exponent")
		}
	}
	return json.Number(d.src[start:d.pos]), nil
}

// strPlain marks bytes that may appear unescaped inside a string.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// str decodes a string starting at the opening quote.
func (d *decoder) str() (string, error) {
	d.pos++ // opening quote
	start := d.pos
	var high byte // OR of all bytes: its top bit says whether UTF-8 must be checked
	// Fast path: no escapes.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if strPlain[c] {
			high |= c
			d.pos++
			continue
		}
		if c == '"' {
			s := d.data[start:d.pos]
			if high >= utf8.RuneSelf && !utf8.Valid(s) {
				return "", d.errf("invalid UTF-8 in string")
			}
			d.pos++
			return d.src[start : d.pos-1], nil
		}
		if c == '\\' {
			break
		}
		return "", d.errf("control character 0x%02x in string (escape it)", c)
	}
	buf := append([]byte(nil), d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			if !utf8.Valid(buf) {
				return "", &SyntaxError{Offset: start, Msg: "invalid UTF-8 in string"}
			}
			return string(buf), nil
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				d.pos = len(d.data)
				return "", d.errf("unexpected end of input in string escape")
			}
			e := d.data[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.errf("invalid \\u escape, want 4 hex digits")
				}
				if utf16.IsSurrogate(r) {
					// A lone surrogate becomes U+FFFD, as encoding/json does.
					r2 := rune(-1)
					if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						if x, ok := d.hex4(); ok {
							r2 = x
						} else {
							d.pos = save
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							buf = utf8.AppendRune(buf, dec)
							continue
						}
						d.pos = save
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				d.pos--
				return "", d.errf("invalid escape '\\%c' in string", e)
			}
		case c < 0x20:
			return "", d.errf("control character 0x%02x in string (escape it)", c)
		default:
			buf = append(buf, c)
			d.pos++
		}
	}
	return "", d.errf("unexpected end of input in string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}
