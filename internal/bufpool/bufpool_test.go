package bufpool

import "testing"

// TestGetPut: Get gives room for what is asked and nothing above Max; Put keeps only
// buffers within Max, and a kept one comes back empty (it may come back: sync.Pool is free
// to drop it, so reuse itself is not asserted).
func TestGetPut(t *testing.T) {
	p := &Pool{Max: 1 << 10}
	for _, n := range []int{0, 1, 100, 512, 1000, 1 << 10} {
		b := p.Get(n)
		if b == nil || len(b) != 0 || cap(b) < n || cap(b) > p.Max {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		p.Put(append(b, "stale bytes"...))
	}
	if b := p.Get(p.Max + 1); b != nil {
		t.Fatalf("Get above Max: cap %d, want nil", cap(b))
	}
	p.Put(make([]byte, 0, p.Max+1)) // kept no: too big
	p.Put(nil)
	for range 100 {
		if b := p.Get(10); len(b) != 0 || cap(b) < 10 || cap(b) > p.Max {
			t.Fatalf("Get after Puts: len %d cap %d", len(b), cap(b))
		}
	}
}
