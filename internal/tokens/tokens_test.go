package tokens

import (
	"strings"
	"testing"
)

func TestCountKnownStrings(t *testing.T) {
	// Reference counts from OpenAI's tiktoken for these encodings.
	tests := []struct {
		enc, text string
		want      int
	}{
		{CL100k, "hello world", 2},
		{O200k, "hello world", 2},
		{CL100k, "tiktoken is great!", 6},
		{O200k, "", 0},
	}
	for _, tt := range tests {
		c, err := New(tt.enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CountString(tt.text); got != tt.want {
			t.Errorf("%s %q = %d, want %d", tt.enc, tt.text, got, tt.want)
		}
	}
}

func TestCountVsEstimate(t *testing.T) {
	c, err := New(Default)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("The relay daemon stores artifacts once and agents pass references. ", 60)
	n := c.CountString(text)
	est := Estimate(len(text))
	// English prose is ~4-5 bytes per token; the two must be in the same ballpark but not equal.
	if n < est/2 || n > est*2 || n == est {
		t.Fatalf("BPE %d vs estimate %d", n, est)
	}
	if got := c.Count([]byte{0xff, 0xfe, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05}); got != 2 {
		t.Fatalf("binary count = %d, want estimate 2", got)
	}
}

func TestUnknownEncoding(t *testing.T) {
	if _, err := New("p99k"); err == nil {
		t.Fatal("want error")
	}
}

func TestCache(t *testing.T) {
	c, _ := New(Default)
	k := NewCache(c)
	calls := 0
	load := func() ([]byte, error) { calls++; return []byte("hello world"), nil }
	for range 3 {
		if n, err := k.Count("h1", load); err != nil || n != 2 {
			t.Fatal(n, err)
		}
	}
	if calls != 1 {
		t.Fatalf("loaded %d times", calls)
	}
}

// BenchmarkCount2KB counts 2 KB of code, beside tiktoken-go (the library the counts
// replaced) on the same text.
func BenchmarkCount2KB(b *testing.B) {
	text := []byte(strings.Repeat("func main() { fmt.Println(\"hello, relay\") } // comment\n", 36))
	c, err := New(Default)
	if err != nil {
		b.Fatal(err)
	}
	ref := reference(b, Default)
	b.Run("relay", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			c.Count(text)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			ref.EncodeOrdinary(string(text))
		}
	})
}
