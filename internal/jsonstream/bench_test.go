package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/realtext"
)

// BenchmarkStringReaderSource decodes 100 KB of Go source as a JSON string, what an agent
// uploads most: newlines, tabs and quotes are escapes, so this is the escape-heavy path
// (encoding/json's whole-string decode beside it for scale).
func BenchmarkStringReaderSource(b *testing.B) {
	src := realtext.Files(b, "../memory/sqlite/*.go", 100<<10)
	doc, _ := json.Marshal(string(src[:100<<10]))
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(100 << 10)
		for b.Loop() {
			sr := NewStringReader(bufio.NewReaderSize(bytes.NewReader(doc[1:]), 32<<10), 1)
			if n, err := io.Copy(io.Discard, sr); err != nil || n != 100<<10 {
				b.Fatalf("decoded %d bytes: %v", n, err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(100 << 10)
		for b.Loop() {
			var s string
			if err := json.Unmarshal(doc, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
