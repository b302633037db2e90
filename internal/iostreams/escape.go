package iostreams

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"
)

// Text relay prints may come from anyone: artifact names, fetched pages,
// thread names, event types, answers. A terminal obeys control sequences in
// it (OSC 0 sets the window title, OSC 52 writes the clipboard, CSI moves the
// cursor and can hide lines, C1 bytes start the same sequences in 8-bit
// form, a lone CR overwrites what was printed), so everything bound for a
// terminal passes through the escaper below. Pipes and files (--out, --json,
// redirection) get the bytes as they are.

// ownColours are the only escape sequences relay itself writes (Color); they
// pass through the terminal writer unchanged. Hostile text can at most
// recolour what follows, never hide it, move the cursor or talk to the
// terminal.
var ownColours = [][]byte{[]byte("\x1b[31m"), []byte("\x1b[32m"), []byte("\x1b[33m"), []byte("\x1b[0m")}

const hexDigits = "0123456789abcdef"

// Escape returns s with every character a terminal would act on written as
// a visible escape: C0 controls (except newline and tab) and DEL as \xNN, a
// CR as \r unless it ends a CRLF line, C1 controls and bidirectional
// overrides as \uNNNN, and bytes that are not UTF-8 as \xNN. Text without
// such characters comes back unchanged.
func Escape(s string) string {
	if safeString(s) {
		return s
	}
	out, _ := escape(nil, []byte(s), true, false, false)
	return string(out)
}

// EscapeLine is Escape for one field of a line (a name in a listing): newline
// and tab are escaped too, so a field cannot forge extra lines or columns.
func EscapeLine(s string) string {
	out, _ := escape(nil, []byte(s), true, false, true)
	return string(out)
}

func safeString(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\n' && b != '\t' || b == 0x7f || b >= 0x80 {
			return false
		}
	}
	return true
}

// escape appends the escaped form of src to dst. Unless final, an ambiguous
// tail (an incomplete UTF-8 character, a CR that may start CRLF, an ESC that
// may start one of relay's colours) is not consumed and is returned as rest,
// so a stream split anywhere escapes exactly like the whole text.
func escape(dst, src []byte, final, colours, line bool) (out, rest []byte) {
	for i := 0; i < len(src); {
		b := src[i]
		switch {
		case b == '\n' || b == '\t':
			if line {
				dst = appendHex(dst, b)
			} else {
				dst = append(dst, b)
			}
			i++
		case b == '\r':
			if i+1 == len(src) && !final && !line {
				return dst, src[i:]
			}
			if !line && i+1 < len(src) && src[i+1] == '\n' {
				dst = append(dst, '\r', '\n')
				i += 2
				continue
			}
			dst = append(dst, '\\', 'r')
			i++
		case b == 0x1b && colours:
			n, partial := matchColour(src[i:])
			if n > 0 {
				dst = append(dst, src[i:i+n]...)
				i += n
				continue
			}
			if partial && !final {
				return dst, src[i:]
			}
			dst = appendHex(dst, b)
			i++
		case b < 0x20 || b == 0x7f:
			dst = appendHex(dst, b)
			i++
		case b < 0x80:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				if !final && !utf8.FullRune(src[i:]) {
					return dst, src[i:]
				}
				dst = appendHex(dst, b)
				i++
				continue
			}
			if dangerousRune(r) {
				dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
			} else {
				dst = append(dst, src[i:i+size]...)
			}
			i += size
		}
	}
	return dst, nil
}

func appendHex(dst []byte, b byte) []byte {
	switch b {
	case '\n':
		return append(dst, '\\', 'n')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'x', hexDigits[b>>4], hexDigits[b&0xf])
}

// matchColour reports the length of one of relay's colours at the start of
// b, or whether b is a proper prefix of one (more bytes may complete it).
func matchColour(b []byte) (n int, partial bool) {
	for _, c := range ownColours {
		if bytes.HasPrefix(b, c) {
			return len(c), false
		}
		if len(b) < len(c) && bytes.HasPrefix(c, b) {
			partial = true
		}
	}
	return 0, partial
}

// dangerousRune: C1 controls (8-bit CSI, OSC, …), line/paragraph
// separators, and the bidirectional controls that reorder what is shown.
func dangerousRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f ||
		r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// safeWriter escapes everything written to a terminal.
type safeWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
	buf     []byte
}

// NewTerminalWriter returns a writer that escapes control characters in
// everything written through it (relay's own colours excepted). Call Flush
// before exit so a held-back incomplete tail is written too.
func NewTerminalWriter(w io.Writer) io.Writer { return &safeWriter{w: w} }

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := p
	if len(s.pending) > 0 {
		src = append(s.pending, p...)
	}
	out, rest := escape(s.buf[:0], src, false, true, false)
	s.pending = append([]byte(nil), rest...)
	s.buf = out
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back, escaped as final.
func (s *safeWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	out, _ := escape(nil, s.pending, true, true, false)
	s.pending = nil
	_, err := s.w.Write(out)
	return err
}

// Raw returns the writer under w when w escapes for a terminal, else w: for
// output that is already safe by construction (JSON from encoding/json has
// every C0 control escaped) and must stay byte-exact.
func Raw(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		_ = s.Flush()
		return s.w
	}
	return w
}
