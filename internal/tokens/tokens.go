// Package tokens counts LLM tokens: a real BPE count with OpenAI's o200k_base/cl100k_base
// vocabularies (embedded in the binary, nothing downloaded) beside the bytes/4 estimate.
package tokens

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// Encodings that ship with relay.
const (
	O200k  = "o200k_base"  // GPT-4o family
	CL100k = "cl100k_base" // GPT-4 / GPT-3.5 family
	// Default is what relay reports.
	Default = O200k
)

// Resident is about the heap a loaded encoding keeps for the life of the process (its
// vocabulary, measured with runtime.MemStats after a GC by TestResident: o200k_base 4.3 MB,
// cl100k_base 2.1 MB). A process with a soft memory limit adds it to the limit
// (server.reserveMemory), or the collector runs back to back.
func Resident(name string) int64 {
	if name == CL100k {
		return 3 << 20
	}
	return 5 << 20
}

// Estimate is the usual chars-per-token rule of thumb: bytes / 4.
func Estimate(n int) int { return n / 4 }

var (
	encMu sync.Mutex
	encs  = map[string]*vocab{}
)

// Counter counts tokens with one encoding. Safe for concurrent use.
type Counter struct {
	name string
	v    *vocab
}

// New loads an encoding (tens of milliseconds the first time; later calls share it).
func New(name string) (*Counter, error) {
	encMu.Lock()
	defer encMu.Unlock()
	if v, ok := encs[name]; ok {
		return &Counter{name: name, v: v}, nil
	}
	v, err := loadVocab(name)
	if err != nil {
		return nil, fmt.Errorf("load token encoding %s: %w", name, err)
	}
	encs[name] = v
	return &Counter{name: name, v: v}, nil
}

// Name returns the encoding name.
func (c *Counter) Name() string { return c.name }

// Count returns the number of BPE tokens in b. Text that is not UTF-8 (binary) is never sent
// to a model as is, so it falls back to the estimate.
func (c *Counter) Count(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if !utf8.Valid(b) {
		return Estimate(len(b))
	}
	return c.v.count(string(b))
}

// CountString is Count for a string.
func (c *Counter) CountString(s string) int { return c.Count([]byte(s)) }

// Cache memoizes counts by content hash, since artifacts are immutable and content-addressed.
type Cache struct {
	c  *Counter
	mu sync.Mutex
	m  map[string]int
}

// maxCacheEntries bounds memory: an int per artifact hash.
const maxCacheEntries = 200000

// NewCache wraps c.
func NewCache(c *Counter) *Cache { return &Cache{c: c, m: map[string]int{}} }

// Counter returns the wrapped counter.
func (k *Cache) Counter() *Counter { return k.c }

// Count returns the token count of content whose sha256 is hash.
func (k *Cache) Count(hash string, content func() ([]byte, error)) (int, error) {
	k.mu.Lock()
	n, ok := k.m[hash]
	k.mu.Unlock()
	if ok {
		return n, nil
	}
	b, err := content()
	if err != nil {
		return 0, err
	}
	n = k.c.Count(b)
	k.mu.Lock()
	if len(k.m) >= maxCacheEntries {
		clear(k.m)
	}
	k.m[hash] = n
	k.mu.Unlock()
	return n, nil
}
