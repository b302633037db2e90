// Package bufpool keeps byte buffers between requests. An artifact put used to allocate a
// fresh buffer for each stage it passes through (upload, base64, compression, the
// indexer's decompression), and under the daemon's memory limit that garbage made the
// collector run often; these pools hand the buffers on instead.
package bufpool

import (
	"math/bits"
	"sync"
)

// Pool keeps buffers of up to Max bytes of capacity; larger ones are left to the collector,
// so a rare huge request does not pin its memory.
type Pool struct {
	Max int
	p   sync.Pool
}

// Get returns an empty buffer with room for at least n bytes: a kept one when one is big
// enough, else a new one rounded up to a power of two (so it serves later, smaller
// requests). For n above Max it returns nil: the caller allocates what it needs.
func (p *Pool) Get(n int) []byte {
	if n > p.Max {
		return nil
	}
	if b, ok := p.p.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	} // a kept buffer too small for n is dropped: the new one below replaces it
	return make([]byte, 0, min(1<<bits.Len(uint(n)), max(p.Max, n)))
}

// Put keeps b for a later Get. Nothing may use b afterwards.
func (p *Pool) Put(b []byte) {
	if b == nil || cap(b) > p.Max {
		return
	}
	b = b[:0]
	p.p.Put(&b)
}
