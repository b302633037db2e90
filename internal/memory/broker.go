package memory

import "sync"

// Broker wakes SSE followers of a thread; wake-ups coalesce, followers re-read from the store.
type Broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives a (coalesced) value after each Notify of the thread.
func (b *Broker) Subscribe(threadID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[string]map[chan struct{}]struct{})
	}
	m := b.subs[threadID]
	if m == nil {
		m = make(map[chan struct{}]struct{})
		b.subs[threadID] = m
	}
	m[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs[threadID], ch)
			if len(b.subs[threadID]) == 0 {
				delete(b.subs, threadID)
			}
			b.mu.Unlock()
		})
	}
}

// Notify wakes every subscriber of the thread without blocking.
func (b *Broker) Notify(threadID string) {
	b.mu.Lock()
	for ch := range b.subs[threadID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
}

// NotifyAll wakes every subscriber of every thread (after a gap in which notifications
// may have been missed, such as a lost database connection).
func (b *Broker) NotifyAll() {
	b.mu.Lock()
	for _, m := range b.subs {
		for ch := range m {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	b.mu.Unlock()
}
