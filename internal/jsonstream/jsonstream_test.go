package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readString decodes the JSON string at the start of doc with a StringReader over a reader
// that hands out one byte at a time (so every escape and rune straddles a buffer edge), and
// returns its bytes and what follows it.
func readString(t *testing.T, doc []byte) (got, rest []byte, err error) {
	t.Helper()
	doc = bytes.TrimLeft(doc, " \t\r\n")
	if len(doc) == 0 || doc[0] != '"' {
		return nil, nil, errors.New("not a string")
	}
	br := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(doc[1:])), 16)
	sr := NewStringReader(br, 1)
	var out bytes.Buffer
	buf := make([]byte, 7) // small reads: a rune or escape is split across calls too
	for {
		n, err := sr.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	rest, _ = io.ReadAll(br)
	return out.Bytes(), rest, nil
}

func TestStringReader(t *testing.T) {
	for _, tc := range []struct{ doc, want, err string }{
		{`"plain"`, "plain", ""},
		{`""`, "", ""},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", ""},
		{`"\u00e9\u20AC"`, "é€", ""},
		{`"\ud83d\ude00"`, "😀", ""},
		{`"\ud83dx"`, "\uFFFDx", ""},
		{`"\ud83d\u0041"`, "\uFFFDA", ""},
		{`"\ude00"`, "\uFFFD", ""},
		{"\"a\xffb\"", "a\uFFFDb", ""},
		{"\"\xe2\x82\"", "\uFFFD\uFFFD", ""},
		{`"a\x"`, "", `invalid character 'x' in string escape code`},
		{`"a\'"`, "", `invalid character '\'' in string escape code`},
		{`"\u12G4"`, "", `invalid character 'G' in \u hexadecimal character escape`},
		{"\"a\nb\"", "", `invalid character '\n' in string literal`},
		{`"abc`, "", "unexpected end of JSON input"},
		{`"abc\`, "", "unexpected end of JSON input"},
		{`"\u12`, "", "unexpected end of JSON input"},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			got, _, err := readString(t, []byte(tc.doc))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestSyntaxErrorOffset(t *testing.T) {
	_, _, err := readString(t, []byte(`"abc\q"`))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 6 {
		t.Fatalf("error = %#v, want offset 6 (after the q)", err)
	}
}

// FuzzStringReader holds the streamed decoder to encoding/json: the same bytes for every
// valid string, an error for every invalid one.
func FuzzStringReader(f *testing.F) {
	for _, s := range []string{`"x"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud83d\ud83d"`, "\"\xff\"", `"\"`, `"a\nb"`, `"\u"`, "\"\xf0\x9f\x98\"", `"\/"`, `"\'"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var want string
		wantErr := json.Unmarshal(doc, &want)
		got, rest, err := readString(t, doc)
		if err == nil && len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
			err = errors.New("data after the string")
		}
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%q: encoding/json reads %q, the stream fails: %v", doc, want, err)
		case wantErr != nil && err == nil:
			t.Fatalf("%q: encoding/json fails (%v), the stream reads %q", doc, wantErr, got)
		case wantErr == nil && string(got) != want:
			t.Fatalf("%q: stream %q, encoding/json %q", doc, got, want)
		}
	})
}

type upload struct {
	Name    string   `json:"name"`
	Content *string  `json:"content"`
	Base64  *string  `json:"content_base64"`
	Refs    []string `json:"source_refs"`
}

// decode reads doc the way the daemon reads a request body: one value, then nothing more.
func decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the value")
	}
	return nil
}

// filtered decodes doc through a Filter that takes content and content_base64.
func filtered(doc []byte) (upload, error) {
	var u upload
	taken := map[string]string{}
	f := NewFilter(iotest.HalfReader(bytes.NewReader(doc)), []string{"content", "content_base64"}, func(field string, value io.Reader) error {
		b, err := io.ReadAll(value)
		taken[field] = string(b)
		return err
	})
	defer f.Close() // the next document may get its buffer: every test and fuzz run checks the reuse
	err := decode(f, &u)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		se.Offset = f.Offset(se.Offset)
	}
	if u.Content != nil {
		s := taken["content"]
		u.Content = &s
	}
	if u.Base64 != nil {
		s := taken["content_base64"]
		u.Base64 = &s
	}
	return u, err
}

func TestFilter(t *testing.T) {
	for _, tc := range []struct{ doc, content, name string }{
		{`{"content":"hello\nworld","name":"a.md"}`, "hello\nworld", "a.md"},
		{`{"name":"a.md", "content" : "x\u00e9"}`, "xé", "a.md"},
		{`{"Content":"case","name":"n"}`, "case", "n"},
		{`{"\u0063ontent":"escaped key"}`, "escaped key", ""},
		{`{"content":"first","content":"last"}`, "last", ""},
		{`{"x":{"content":"nested"},"content":"top"}`, "top", ""},
		{`{"x":["content",":"],"content":"top"}`, "top", ""},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			u, err := filtered([]byte(tc.doc))
			if err != nil || u.Content == nil || *u.Content != tc.content || u.Name != tc.name {
				t.Fatalf("got %+v, %v", u, err)
			}
		})
	}
	u, err := filtered([]byte(`{"content":"a","content":null}`))
	if err != nil || u.Content != nil {
		t.Fatalf("a later null leaves no content, as in encoding/json: %+v, %v", u, err)
	}
	if _, err := filtered([]byte(`{"content":5}`)); err == nil || !strings.Contains(err.Error(), "content") {
		t.Fatalf("a number for content: %v", err)
	}
}

// TestFilterClose: a closed filter refuses reads and keeps nothing of its document for the
// filter that reuses its buffer.
func TestFilterClose(t *testing.T) {
	f := NewFilter(strings.NewReader(`{"name":"first","content":"`+strings.Repeat("a", 100<<10)+`"}`), []string{"content"},
		func(string, io.Reader) error { return nil })
	if _, err := io.ReadFull(f, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n, err := f.Read(make([]byte, 4)); n != 0 || err == nil {
		t.Fatalf("read after Close: %d bytes, err %v; want an error", n, err)
	}
	f.Close() // twice is harmless
	for range 3 {
		u, err := filtered([]byte(`{"name":"next","content":"b"}`))
		if err != nil || u.Name != "next" || u.Content == nil || *u.Content != "b" {
			t.Fatalf("next filter: %+v, %v", u, err)
		}
	}
}

func TestFilterOffsetAfterTakenValue(t *testing.T) {
	doc := `{"content":"` + strings.Repeat("x", 1000) + `", x}`
	_, err := filtered([]byte(doc))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want a syntax error", err)
	}
	var u upload
	var want *json.SyntaxError
	if !errors.As(decode(strings.NewReader(doc), &u), &want) || se.Offset != want.Offset {
		t.Fatalf("offset %d, encoding/json says %d", se.Offset, want.Offset)
	}
}

// FuzzFilter holds the filtered decode to encoding/json's of the whole document: the same
// fields for every valid document, an error for every invalid one.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`{"content":"x","name":"n"}`, `{"name":"n","content_base64":"AA=="}`, `{"content":null}`,
		`{"content":"a","content":"b"}`, `{"CONTENT":"\ud83d"}`, `[{"content":"x"}]`, `{"content":"x"}{"content":"y"}`,
		`{"content":"x"]`, `{"content":"x",}`, `{"content" "x"}`, `{"source_refs":["a","b"],"content":"\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var want upload
		wantErr := decode(bytes.NewReader(doc), &want)
		got, err := filtered(doc)
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%q: encoding/json reads %+v, the filter fails: %v", doc, want, err)
		case wantErr != nil && err == nil:
			t.Fatalf("%q: encoding/json fails (%v), the filter reads %+v", doc, wantErr, got)
		case wantErr == nil:
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			if !bytes.Equal(wb, gb) {
				t.Fatalf("%q: filter %s, encoding/json %s", doc, gb, wb)
			}
		}
	})
}

// TestPlain8 checks the eight-byte test against the byte table for every byte value in
// every position.
func TestPlain8(t *testing.T) {
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			if got, want := plain8(binary.LittleEndian.Uint64(w)), plain[c]; got != want {
				t.Fatalf("byte %#x at %d: plain8 = %v, the table says %v", c, pos, got, want)
			}
		}
	}
}
