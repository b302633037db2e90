package postgres

import "sync"

// broker wakes this daemon's followers of a thread; wake-ups coalesce, followers re-read
// from the database.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func (b *broker) subscribe(threadID string) (<-chan struct{}, func()) {
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

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (b *broker) notify(threadID string) {
	b.mu.Lock()
	for ch := range b.subs[threadID] {
		wake(ch)
	}
	b.mu.Unlock()
}

func (b *broker) notifyAll() {
	b.mu.Lock()
	for _, m := range b.subs {
		for ch := range m {
			wake(ch)
		}
	}
	b.mu.Unlock()
}
