// Package jsonstream reads a JSON object whose big string fields are too large to hold in
// memory: those fields' values come out as streams of their unescaped bytes, decoded exactly
// as encoding/json decodes a string, and the rest of the object is left for encoding/json.
//
// Hand-written because no maintained Go JSON tokenizer (encoding/json, encoding/json/jsontext,
// jsoniter, gojay) hands out a string value in pieces: each returns it whole.
package jsonstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// SyntaxError is malformed JSON in a streamed string. Offset counts the bytes read up to and
// including the bad one, from the start of the stream (as json.SyntaxError's does).
type SyntaxError struct {
	Msg    string
	Offset int64
}

func (e *SyntaxError) Error() string { return e.Msg }

// errEnd is the message encoding/json gives for input that stops inside a value.
const errEnd = "unexpected end of JSON input"

// replacement is U+FFFD in UTF-8: what encoding/json writes for invalid UTF-8 and for an
// unpaired surrogate escape.
var replacement = []byte("\uFFFD")

// StringReader yields the unescaped bytes of one JSON string, read from a reader positioned
// just after its opening quote. It consumes the closing quote and then returns io.EOF.
type StringReader struct {
	br   *bufio.Reader
	base int64 // stream offset of the first byte after the opening quote
	n    int64 // bytes consumed from br
	pend []byte
	done bool
	err  error
	// rune holds the bytes special returns, so an escape or a rune allocates nothing (pend
	// may point into it; special runs again only once pend is drained).
	rune [utf8.UTFMax]byte
}

// simpleEscape maps the byte after a backslash to what a two-byte escape stands for (0:
// not a two-byte escape). Source code uploads are full of \n, \t and \": decoded in the
// copy loop they cost no call each.
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// plain marks the bytes that stand for themselves inside a JSON string. A table lookup per
// byte keeps the copy loop at about a byte per cycle (a compare chain per byte was a third
// of the speed on source code).
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plain8 reports whether all eight bytes packed in x are plain: none below 0x20, none a
// quote or a backslash, none from 0x80. Eight at a time (the classic has-zero-byte bit
// trick: a byte's high bit survives v-1 &^ v only where v was 0) makes long runs of prose
// cost an eighth of the byte loop.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((x-ones*' ')&^x|(q-ones)&^q|(b-ones)&^b|x)&highs == 0
}

// NewStringReader reads a string's body from br; base is br's offset in the whole stream
// (used only in error offsets).
func NewStringReader(br *bufio.Reader, base int64) *StringReader {
	return &StringReader{br: br, base: base}
}

// Consumed is the number of bytes read from the underlying reader, closing quote included.
func (s *StringReader) Consumed() int64 { return s.n }

func (s *StringReader) fail(at int64, msg string) error {
	s.err = &SyntaxError{Msg: msg, Offset: s.base + s.n + at}
	return s.err
}

func (s *StringReader) Read(p []byte) (int, error) {
	n := copy(p, s.pend)
	s.pend = s.pend[n:]
	for n < len(p) && len(s.pend) == 0 {
		if s.err != nil {
			return n, s.err
		}
		if s.done {
			return n, io.EOF
		}
		buf, err := s.br.Peek(max(1, s.br.Buffered()))
		if len(buf) == 0 {
			return n, s.readErr(err)
		}
		i := 0
		for i < len(buf) && n < len(p) {
			seg := buf[i:min(len(buf), i+len(p)-n)]
			k := 0
			for k+8 <= len(seg) && plain8(binary.LittleEndian.Uint64(seg[k:])) {
				k += 8
			}
			for k < len(seg) && plain[seg[k]] {
				k++
			}
			n += copy(p[n:], seg[:k])
			i += k
			if i+1 < len(buf) && n < len(p) && buf[i] == '\\' && simpleEscape[buf[i+1]] != 0 {
				p[n] = simpleEscape[buf[i+1]]
				n++
				i += 2
				continue
			}
			// A valid multi-byte rune whole in buf stands for itself too (prose in other
			// scripts is mostly these); an invalid or cut one goes the slow way.
			if i < len(buf) && buf[i] >= utf8.RuneSelf {
				if r, size := utf8.DecodeRune(buf[i:]); (r != utf8.RuneError || size > 1) && size <= len(p)-n {
					n += copy(p[n:], buf[i:i+size])
					i += size
					continue
				}
			}
			break
		}
		s.discard(i)
		if i == len(buf) || n == len(p) {
			continue
		}
		out, err := s.special(buf[i])
		if err != nil {
			return n, err
		}
		k := copy(p[n:], out)
		n += k
		s.pend = out[k:]
	}
	return n, nil
}

func (s *StringReader) discard(k int) {
	s.br.Discard(k)
	s.n += int64(k)
}

// readErr turns a failed read into an error: the end of input inside a string is malformed
// JSON, anything else (a body over its limit, a dropped connection) passes through.
func (s *StringReader) readErr(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return s.fail(0, errEnd)
	}
	s.err = err
	return err
}

// special decodes what starts with c (a quote, control character, backslash or non-ASCII
// byte) and consumes it, returning the bytes it stands for.
func (s *StringReader) special(c byte) ([]byte, error) {
	switch {
	case c == '"':
		s.discard(1)
		s.done = true
		return nil, nil
	case c < ' ':
		return nil, s.fail(1, "invalid character "+quoteChar(c)+" in string literal")
	case c == '\\':
		return s.escape()
	}
	b, err := s.br.Peek(utf8.UTFMax)
	if len(b) == 0 {
		return nil, s.readErr(err)
	}
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size == 1 {
		s.discard(1)
		return replacement, nil
	}
	out := append(s.rune[:0], b[:size]...)
	s.discard(size)
	return out, nil
}

func (s *StringReader) escape() ([]byte, error) {
	b, err := s.br.Peek(2)
	if len(b) < 2 {
		return nil, s.readErr(err)
	}
	var out byte
	switch b[1] {
	case '"', '\\', '/':
		out = b[1]
	case 'b':
		out = '\b'
	case 'f':
		out = '\f'
	case 'n':
		out = '\n'
	case 'r':
		out = '\r'
	case 't':
		out = '\t'
	case 'u':
		return s.unicodeEscape()
	default:
		return nil, s.fail(2, "invalid character "+quoteChar(b[1])+" in string escape code")
	}
	s.discard(2)
	s.rune[0] = out
	return s.rune[:1], nil
}

// unicodeEscape decodes \uXXXX, and a following low surrogate escape that pairs with it; an
// unpaired surrogate becomes U+FFFD, as encoding/json has it.
func (s *StringReader) unicodeEscape() ([]byte, error) {
	b, err := s.br.Peek(12)
	if len(b) < 6 {
		for i := 2; i < len(b); i++ {
			if !isHex(b[i]) {
				return nil, s.fail(int64(i)+1, "invalid character "+quoteChar(b[i])+" in \\u hexadecimal character escape")
			}
		}
		return nil, s.readErr(err)
	}
	for i := 2; i < 6; i++ {
		if !isHex(b[i]) {
			return nil, s.fail(int64(i)+1, "invalid character "+quoteChar(b[i])+" in \\u hexadecimal character escape")
		}
	}
	r := getu4(b)
	if utf16.IsSurrogate(r) {
		if dec := utf16.DecodeRune(r, getu4(b[6:])); dec != utf8.RuneError {
			s.discard(12)
			return utf8.AppendRune(s.rune[:0], dec), nil
		}
		r = utf8.RuneError
	}
	s.discard(6)
	return utf8.AppendRune(s.rune[:0], r), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// getu4 reads the rune of a \uXXXX at the start of b, or -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		if !isHex(c) {
			return -1
		}
		v, _ := strconv.ParseUint(string(c), 16, 8)
		r = r*16 + rune(v)
	}
	return r
}

// quoteChar formats c as encoding/json's messages do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}
