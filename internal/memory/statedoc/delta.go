package statedoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// HeaderDelta returns what changed from header old to header cur as a compact delta: a JSON
// object with one member per changed header member (the version "v" excluded; the caller
// states it). A member's value is its new value, null when it is gone, or, for a list that
// only lost items at the front and gained items at the end (the newest-N lists of an agent
// loop), {"drop":k,"add":[…]}. It is RFC 7396 merge patch plus that list form, chosen over
// RFC 6902 because its per-change boilerplate costs a third of the tokens. It returns nil
// when the delta would be at least as long as cur: then the caller sends cur.
func HeaderDelta(old, cur []byte) ([]byte, error) {
	ov, err := jsonpatch.Decode(old)
	if err != nil {
		return nil, fmt.Errorf("read the old header: %w", err)
	}
	cv, err := jsonpatch.Decode(cur)
	if err != nil {
		return nil, fmt.Errorf("read the current header: %w", err)
	}
	oo, ok1 := ov.(*jsonpatch.Object)
	co, ok2 := cv.(*jsonpatch.Object)
	if !ok1 || !ok2 {
		return nil, errors.New("a header must be a JSON object")
	}
	d := jsonpatch.NewObject(4)
	for i := 0; i < co.Len(); i++ {
		k, nv := co.At(i)
		if k == "v" {
			continue
		}
		pv, had := oo.Get(k)
		if had && jsonpatch.Equal(pv, nv) {
			continue
		}
		d.Set(k, listChange(pv, nv))
	}
	for _, k := range oo.Keys() {
		if k != "v" && !co.Has(k) {
			d.Set(k, nil)
		}
	}
	b, err := jsonpatch.Encode(d)
	if err != nil {
		return nil, err
	}
	if len(b) >= len(cur) {
		return nil, nil
	}
	return b, nil
}

// listChange returns {"drop":k,"add":[…]} when new is old without its first k items plus
// some items at the end and that form is shorter; otherwise new itself.
func listChange(old, new any) any {
	ol, ok1 := old.([]any)
	nl, ok2 := new.([]any)
	if !ok1 || !ok2 {
		return new
	}
	for k := 0; k <= len(ol); k++ {
		keep := ol[k:]
		if len(keep) > len(nl) {
			continue
		}
		same := true
		for i := range keep {
			if !jsonpatch.Equal(keep[i], nl[i]) {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		w := jsonpatch.NewObject(2)
		if k > 0 {
			w.Set("drop", json.Number(strconv.Itoa(k)))
		}
		if add := nl[len(keep):]; len(add) > 0 {
			w.Set("add", add)
		}
		wb, err1 := jsonpatch.Encode(w)
		fb, err2 := jsonpatch.Encode(nl)
		if err1 == nil && err2 == nil && len(wb) < len(fb) {
			return w
		}
		return new
	}
	return new
}

// ApplyHeaderDelta applies a delta body ({"since":N,"v":M,…}, as the daemon sends it) to the
// header the client holds at version N and returns the header at version M.
func ApplyHeaderDelta(header, delta []byte) ([]byte, error) {
	hv, err := jsonpatch.Decode(header)
	if err != nil {
		return nil, fmt.Errorf("read the header: %w", err)
	}
	dv, err := jsonpatch.Decode(delta)
	if err != nil {
		return nil, fmt.Errorf("read the delta: %w", err)
	}
	h, ok1 := hv.(*jsonpatch.Object)
	d, ok2 := dv.(*jsonpatch.Object)
	if !ok1 || !ok2 {
		return nil, errors.New("header and delta must be JSON objects")
	}
	for i := 0; i < d.Len(); i++ {
		k, v := d.At(i)
		switch {
		case k == "since":
			continue
		case v == nil:
			h.Delete(k)
			continue
		}
		if w, ok := v.(*jsonpatch.Object); ok {
			if cur, ok := h.Get(k); ok {
				if l, ok := cur.([]any); ok && isWindow(w) {
					n := 0
					if dv, ok := w.Get("drop"); ok {
						var err error
						n, err = strconv.Atoi(string(dv.(json.Number)))
						if err != nil || n < 0 || n > len(l) {
							return nil, fmt.Errorf("delta drops %v items from %s, which has %d", dv, k, len(l))
						}
					}
					out := append([]any{}, l[n:]...)
					if av, ok := w.Get("add"); ok {
						add, ok := av.([]any)
						if !ok {
							return nil, fmt.Errorf("delta %s.add is not a list", k)
						}
						out = append(out, add...)
					}
					h.Set(k, out)
					continue
				}
			}
		}
		h.Set(k, v)
	}
	return jsonpatch.Encode(h)
}

// isWindow reports whether o has only the list-change members drop (a number) and add.
func isWindow(o *jsonpatch.Object) bool {
	if o.Len() == 0 {
		return false
	}
	for _, k := range o.Keys() {
		switch k {
		case "drop":
			v, _ := o.Get(k)
			if _, ok := v.(json.Number); !ok {
				return false
			}
		case "add":
		default:
			return false
		}
	}
	return true
}

// WithSaved returns header with its counters' "saved" member set to saved (removed unless positive),
// so the header states the same tokens-avoided figure as the thread's stats.
func WithSaved(header []byte, saved int64) ([]byte, error) {
	v, err := jsonpatch.Decode(header)
	if err != nil {
		return nil, err
	}
	h, ok := v.(*jsonpatch.Object)
	if !ok {
		return nil, errors.New("a header must be a JSON object")
	}
	m := jsonpatch.NewObject(2)
	if mv, ok := h.Get("m"); ok {
		if mo, ok := mv.(*jsonpatch.Object); ok {
			m = mo
		}
	}
	if saved <= 0 {
		m.Delete("saved") // a negative saving is nothing an agent can act on
	} else {
		m.Set("saved", json.Number(strconv.FormatInt(saved, 10)))
	}
	if m.Len() == 0 {
		h.Delete("m")
	} else {
		h.Set("m", m)
	}
	return jsonpatch.Encode(h)
}

// StripMetrics returns header without its counters: what savings count as the header's cost,
// since the counters cannot count themselves.
func StripMetrics(header []byte) []byte {
	v, err := jsonpatch.Decode(header)
	if err != nil {
		return header
	}
	h, ok := v.(*jsonpatch.Object)
	if !ok || !h.Has("m") {
		return header
	}
	h.Delete("m")
	b, err := jsonpatch.Encode(h)
	if err != nil {
		return header
	}
	return b
}
