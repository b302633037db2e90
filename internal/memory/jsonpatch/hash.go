package jsonpatch

import (
	"encoding/json"
	"hash/maphash"
)

var hashSeed = maphash.MakeSeed()

// hashValue returns a hash that agrees with Equal: equal values hash alike (member order
// and number spelling do not matter), so unequal hashes prove values differ.
func hashValue(v any) uint64 {
	switch t := v.(type) {
	case nil:
		return 0x6e756c6c
	case bool:
		if t {
			return 0x74727565
		}
		return 0x66616c73
	case string:
		return maphash.String(hashSeed, t) ^ 0x5
	case json.Number:
		n := normalizeNumber(string(t))
		h := maphash.String(hashSeed, n.digits) ^ maphash.String(hashSeed, n.scale.String())*31
		if n.neg {
			h = ^h
		}
		return h
	case []any:
		h := uint64(0xa77a)
		for _, x := range t {
			h = h*1099511628211 ^ hashValue(x)
		}
		return h
	case *Object:
		// Sum of member hashes: independent of member order.
		var h uint64 = 0x0b1ec7
		for i, k := range t.keys {
			h += (maphash.String(hashSeed, k) * 0x9e3779b97f4a7c15) ^ hashValue(t.vals[i])
		}
		return h
	}
	return 0
}
