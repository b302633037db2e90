package statedoc

import (
	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// HeaderDelta returns an RFC 6902 JSON Patch that turns header old into header cur, or nil
// when the patch would be at least as long as cur itself: then the caller sends cur, since an
// agent that pays for the change must never pay more than for the state.
func HeaderDelta(old, cur []byte) ([]byte, error) {
	p, err := jsonpatch.Diff(old, cur)
	if err != nil {
		return nil, err
	}
	if len(p) >= len(cur) {
		return nil, nil
	}
	return p, nil
}
