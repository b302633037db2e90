package capability

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/relaydev/relay/internal/memory"
)

// Aliases keep the capability layer's vocabulary; the storage contract is memory's.
type (
	CachedResult = memory.CachedResult
	Call         = memory.CapabilityCall
	// Store persists the cache and the call log.
	Store = memory.CapabilityStore
)

// MaxCacheEntries bounds the cache so it cannot grow without limit; the soonest-expiring go first.
const MaxCacheEntries = memory.MaxCacheEntries

// MemStore is an in-memory Store for tests and embedding.
type MemStore struct {
	mu    sync.Mutex
	cache map[string]CachedResult
	calls []Call
}

func NewMemStore() *MemStore { return &MemStore{cache: map[string]CachedResult{}} }

func (m *MemStore) CacheGet(_ context.Context, key string, now time.Time) (*CachedResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.cache[key]
	if !ok || !now.Before(c.ExpiresAt) {
		delete(m.cache, key)
		return nil, nil
	}
	return &c, nil
}

func (m *MemStore) CachePut(_ context.Context, key string, r CachedResult, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cachePut(key, r)
	return nil
}

func (m *MemStore) cachePut(key string, r CachedResult) {
	if len(m.cache) >= MaxCacheEntries {
		type kv struct {
			k string
			t time.Time
		}
		all := make([]kv, 0, len(m.cache))
		for k, v := range m.cache {
			all = append(all, kv{k, v.ExpiresAt})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
		for _, e := range all[:len(all)-MaxCacheEntries+1] {
			delete(m.cache, e.k)
		}
	}
	m.cache[key] = r
}

// RecordCall keeps the call and its cache entry; a MemStore has no threads, so the
// record's event and metrics are not kept (the Event returned is zero).
func (m *MemStore) RecordCall(_ context.Context, rec memory.CallRecord) (memory.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec.Cache != nil {
		m.cachePut(rec.CacheKey, *rec.Cache)
	}
	m.calls = append(m.calls, rec.Call)
	return memory.Event{}, nil
}

func (m *MemStore) Calls(_ context.Context, threadID string) ([]Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Call
	for _, c := range m.calls {
		if c.ThreadID == threadID {
			out = append(out, c)
		}
	}
	return out, nil
}
