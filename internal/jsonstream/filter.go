package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// maxKey bounds the bytes of a top-level key kept to compare with the streamed fields' names;
// a longer key names none of them.
const maxKey = 256

// Filter passes a JSON object through unchanged except for the string values of the named
// top-level fields: each is handed to Take as a stream and replaced by "" in the output. Feed
// the output to encoding/json, which then validates the rest and decodes the other fields
// with its own rules, holding only the small remainder in memory.
//
// Fields match keys as encoding/json matches struct fields (case-insensitively). A field's
// value that is not a string (null, a number) passes through for encoding/json to judge.
type Filter struct {
	// Take reads the value of field (one of Fields) to its end. A field named twice is taken
	// twice; encoding/json keeps the last.
	Take   func(field string, value io.Reader) error
	Fields []string

	br      *bufio.Reader
	in, out int64 // bytes read, bytes passed on

	depth     int
	started   bool // the first value has begun
	object    bool // the top-level value is an object
	done      bool // the top-level value has ended: nothing more is taken
	inString  bool
	escaped   bool
	keyNext   bool // at depth 1, a key comes next
	valueNext bool // at depth 1, a value comes next
	inKey     bool
	key       []byte
	field     string // the field whose value comes next, "" for none
	divert    bool   // a taken value's opening quote has been read
	pend      []byte
	cuts      []cut
}

// cut records a value taken out: at output offset at, removed bytes fewer were passed on.
type cut struct{ at, removed int64 }

var errClosed = errors.New("jsonstream: read from a closed filter")

// readers keeps the 64 KB read buffers of closed filters: allocated per request, they were
// half of what a 2 KB artifact put left for the collector.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// NewFilter reads the object from r. Close it when done to let the next filter reuse its
// buffer.
func NewFilter(r io.Reader, fields []string, take func(field string, value io.Reader) error) *Filter {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &Filter{br: br, Fields: fields, Take: take}
}

// Close gives the filter's buffer back; the filter and every reader Take was given must not
// be used afterwards. It does not close the source.
func (f *Filter) Close() {
	if f.br != nil {
		f.br.Reset(nil) // drop the source, so a pooled buffer keeps no request alive
		readers.Put(f.br)
		f.br = nil
	}
}

// Offset maps an offset in the filtered output (a json.SyntaxError's) to one in the input.
func (f *Filter) Offset(out int64) int64 {
	in := out
	for _, c := range f.cuts {
		if c.at < out {
			in += c.removed
		}
	}
	return in
}

func (f *Filter) Read(p []byte) (int, error) {
	if f.br == nil {
		return 0, errClosed
	}
	n := copy(p, f.pend)
	f.pend = f.pend[n:]
	f.out += int64(n)
	for n < len(p) {
		if f.divert {
			if n > 0 {
				// Let the decoder judge everything before the value first.
				return n, nil
			}
			if err := f.take(); err != nil {
				return 0, err
			}
			k := copy(p, `""`)
			f.pend = []byte(`""`)[k:]
			f.out += int64(k)
			n += k
			continue
		}
		c, err := f.br.ReadByte()
		if err != nil {
			return n, err
		}
		f.in++
		if f.step(c) {
			f.divert = true
			continue
		}
		p[n] = c
		n++
		f.out++
	}
	return n, nil
}

func (f *Filter) take() error {
	f.divert = false
	start := f.in - 1 // the opening quote
	sr := NewStringReader(f.br, f.in)
	err := f.Take(f.field, sr)
	if err == nil {
		// Whatever Take left unread is still part of the input.
		_, err = io.Copy(io.Discard, sr)
	}
	if err != nil {
		return err
	}
	f.in += sr.Consumed()
	f.cuts = append(f.cuts, cut{at: f.out, removed: f.in - start - 2})
	f.field = ""
	return nil
}

// step follows the structure through byte c and reports whether c opens a value to take.
func (f *Filter) step(c byte) bool {
	if f.inString {
		switch {
		case f.escaped:
			f.escaped = false
		case c == '\\':
			f.escaped = true
		case c == '"':
			f.inString = false
			if f.inKey {
				f.inKey = false
				f.field = f.match()
			}
			return false
		}
		if f.inKey && len(f.key) <= maxKey {
			f.key = append(f.key, c)
		}
		return false
	}
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return false
	}
	top := f.object && !f.done && f.depth == 1
	if !f.started {
		f.started = true
		f.object = c == '{'
	}
	switch {
	case top && f.keyNext && c == '"':
		f.keyNext, f.inString, f.inKey, f.key = false, true, true, f.key[:0]
		return false
	case top && c == ':':
		f.valueNext = true
		return false
	case top && c == ',':
		f.keyNext, f.field = true, ""
		return false
	case top && f.valueNext:
		f.valueNext = false
		if c == '"' && f.field != "" {
			return true
		}
		f.field = ""
	}
	switch c {
	case '"':
		f.inString = true
	case '{', '[':
		f.depth++
		if f.depth == 1 && f.object {
			f.keyNext = true
		}
	case '}', ']':
		f.depth--
		if f.depth <= 0 {
			f.done = true
		}
	}
	return false
}

// match names the streamed field the key just read is, or "".
func (f *Filter) match() string {
	if len(f.key) > maxKey {
		return ""
	}
	var k string
	if json.Unmarshal(append(append([]byte{'"'}, f.key...), '"'), &k) != nil {
		return ""
	}
	for _, name := range f.Fields {
		if bytes.EqualFold([]byte(k), []byte(name)) {
			return name
		}
	}
	return ""
}
