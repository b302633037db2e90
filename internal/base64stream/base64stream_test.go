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
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytewise", iotest.OneByteReader}, {"halves", iotest.HalfReader}} {
			got, err := io.ReadAll(NewDecoder(r.wrap(strings.NewReader(c.in))))
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
		got, err := io.ReadAll(NewDecoder(src))
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
		{"base64stream", NewDecoder},
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
