package memory

import "context"

// Deferred durability. A write made under a context from Deferred is committed as usual
// (atomic, visible to every reader at once, surviving a crash of the daemon), but the store
// may acknowledge it before it reaches the disk: the next durable commit, or the store's
// background checkpoint moments later, makes it durable with everything before it, in
// order. A power loss in between can lose it. It is for records a read leaves behind, which
// can be recomputed or are only bookkeeping: a search's result list, the capability cache,
// the call log and its event and metrics. It keeps fsyncs off the request path of reads.

type deferredKey struct{}

// Deferred returns ctx marked so the store may defer the durability of its writes.
func Deferred(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredKey{}, true)
}

// IsDeferred reports whether ctx was marked by Deferred.
func IsDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferredKey{}).(bool)
	return v
}
