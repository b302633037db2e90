package base64stream

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// decodeStd is what base64.NewDecoder makes of in.
func decodeStd(in []byte) ([]byte, error) {
	return io.ReadAll(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(in)))
}

func TestDecoder(t *testing.T) {
	data := make([]byte, 100<<10+7)
	rand.Read(data)
	enc := base64.StdEncoding.EncodeToString(data)
	var wrapped strings.Builder // MIME style: 76 columns, CRLF
	for s := enc; len(s) > 0; {
		n := min(76, len(s))
		wrapped.WriteString(s[:n] + "\r\n")
		s = s[n:]
	}
	for _, c := range []struct {
		name string
		in   string
		want []byte
		err  bool
	}{
		{"empty", "", nil, false},
		{"one quantum", "aGk=", []byte("hi"), false},
		{"large", enc, data, false},
		{"large wrapped", wrapped.String(), data, false},
		{"newlines only", "\r\n\n", nil, false},
		{"partial quantum", "aGk", nil, true},
		{"data after padding", "aGk=aGk=", nil, true},
		{"bad byte", "aG!=", nil, true},
		{"bad byte far in", enc[:40000] + "*" + enc[40001:], nil, true},
	} {
		for _, r := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytewise", iotest.OneByteReader}, {"halves", iotest.HalfReader},
			{"read bytewise", func(r io.Reader) io.Reader { return r }}, {"read into room", func(r io.Reader) io.Reader { return r }}} {
			got, err := readAll(NewDecoder(r.wrap(strings.NewReader(c.in))), r.name)
			if c.err {
				var ce base64.CorruptInputError
				if err == nil || !errors.As(err, &ce) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%s, %s: err %v, want a CorruptInputError or io.ErrUnexpectedEOF", c.name, r.name, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, c.want) {
				t.Errorf("%s, %s: %d bytes (want %d), err %v", c.name, r.name, len(got), len(c.want), err)
			}
		}
	}
}

// readAll reads d to its end the way the test named: a byte per read ("read bytewise", the
// decoder's own buffer), into a buffer with room for everything ("read into room", decoded in
// place, as the daemon's spool reads), or as io.ReadAll does (both, as its buffer grows).
func readAll(d *Decoder, how string) ([]byte, error) {
	defer d.Close()
	switch how {
	case "read bytewise":
		return io.ReadAll(iotest.OneByteReader(d))
	case "read into room":
		var b bytes.Buffer
		b.Grow(1 << 20)
		_, err := b.ReadFrom(d)
		return b.Bytes(), err
	}
	return io.ReadAll(d)
}

// TestCloseReusesBuffer: a closed decoder refuses reads, and the next one, which may get its
// buffer, decodes its own input only.
func TestCloseReusesBuffer(t *testing.T) {
	d := NewDecoder(strings.NewReader("aGVsbG8gd29ybGQ=")) // "hello world"
	buf := make([]byte, 5)
	if n, err := d.Read(buf); n != 5 || err != nil || string(buf) != "hello" {
		t.Fatalf("first read: %d %q %v", n, buf[:n], err)
	}
	d.Close()
	if n, err := d.Read(buf); n != 0 || err == nil {
		t.Fatalf("read after Close: %d bytes, err %v; want an error", n, err)
	}
	d.Close() // twice is harmless
	for range 3 {
		got, err := readAll(NewDecoder(strings.NewReader("aGk=")), "whole")
		if err != nil || string(got) != "hi" {
			t.Fatalf("next decoder: %q %v, want \"hi\"", got, err)
		}
	}
}

// TestCorruptOffset: the offset of a bad byte counts the encoded bytes before it, across chunks.
func TestCorruptOffset(t *testing.T) {
	enc := []byte(base64.StdEncoding.EncodeToString(make([]byte, 3*chunk)))
	enc[2*chunk+5] = '*'
	_, err := io.ReadAll(NewDecoder(bytes.NewReader(enc)))
	var ce base64.CorruptInputError
	if !errors.As(err, &ce) || int64(ce) != 2*chunk+5 {
		t.Fatalf("err %v, want CorruptInputError(%d)", err, 2*chunk+5)
	}
}

// FuzzDecoder: on any input and any way the source splits it, the decoder accepts what
// base64.NewDecoder accepts, with the same bytes, and refuses what it refuses.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{"", "aGk=", "aGk", "aGk=aGk=", "aG\r\nk=", "aGVsbG8gd29ybGQ=\n", "====", "a===", "aGk=\n\n"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		want, werr := decodeStd(in)
		var src io.Reader = bytes.NewReader(in)
		switch split % 3 {
		case 1:
			src = iotest.OneByteReader(src)
		case 2:
			src = iotest.HalfReader(src)
		}
		got, err := readAll(NewDecoder(src), []string{"whole", "read bytewise", "read into room"}[int(split/3)%3])
		if (err != nil) != (werr != nil) {
			t.Fatalf("%q: err %v, base64.NewDecoder's %v", in, err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, base64.NewDecoder's %q", in, got, want)
		}
	})
}

// BenchmarkDecode100KB: a 100 KB binary upload's content_base64, as the daemon reads it.
func BenchmarkDecode100KB(b *testing.B) {
	data := make([]byte, 100<<10)
	rand.Read(data)
	enc := []byte(base64.StdEncoding.EncodeToString(data))
	for _, d := range []struct {
		name string
		new  func(io.Reader) io.Reader
	}{
		{"stdlib", func(r io.Reader) io.Reader { return base64.NewDecoder(base64.StdEncoding, r) }},
		{"base64stream", func(r io.Reader) io.Reader { return NewDecoder(r) }},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := io.Copy(io.Discard, d.new(bytes.NewReader(enc))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
