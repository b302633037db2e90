package memory

import (
	"errors"
	"testing"
)

// fakeRows yields one artifact size per row (nil: the join found no artifact).
type fakeRows struct {
	sizes []*int64
	at    int
	err   error
}

func (r *fakeRows) Next() bool { r.at++; return r.at <= len(r.sizes) }
func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Scan(dest ...any) error {
	*dest[0].(**int64) = r.sizes[r.at-1]
	return nil
}

func TestCacheEntry(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		sizes []*int64
		want  *CachedResult // nil: no entry
	}{
		{"no entry", nil, nil},
		{"ref names one artifact", []*int64{n(4096)}, &CachedResult{Capability: "c", ResultSize: 4096, ResultSized: true}},
		{"ref names none (result gone)", []*int64{nil}, &CachedResult{Capability: "c"}},
		{"short ref names two", []*int64{n(10), n(20)}, &CachedResult{Capability: "c", ResultSize: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := &fakeRows{sizes: tc.sizes}
			got, err := CacheEntry(rows, func(c *CachedResult, size **int64) error {
				c.Capability = "c"
				return rows.Scan(size)
			})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got entry %+v, want none", got)
			case tc.want == nil:
			case got == nil:
				t.Fatalf("got no entry, want %+v", tc.want)
			case got.Capability != tc.want.Capability || got.ResultSized != tc.want.ResultSized || (got.ResultSized && got.ResultSize != tc.want.ResultSize):
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := CacheEntry(&fakeRows{err: boom}, nil); !errors.Is(err, boom) {
		t.Fatalf("a failed read: got %v, want %v", err, boom)
	}
	if _, err := CacheEntry(&fakeRows{sizes: []*int64{n(1)}}, func(*CachedResult, **int64) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed scan: got %v, want %v", err, boom)
	}
}
