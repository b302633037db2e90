package jsonpatch

import "encoding/json"

// smallObject is the member count up to which Object looks keys up linearly; most JSON
// objects are small and a map per object would dominate decode time.
const smallObject = 8

// Object is a JSON object that remembers member order. The zero value is an empty object.
type Object struct {
	keys []string
	vals []any
	// index maps names to positions once the object has more than smallObject members. It is
	// kept up to date by every writer, so lookups never write and concurrent readers are safe.
	index map[string]int
}

// NewObject returns an empty object with room for n members.
func NewObject(n int) *Object {
	return &Object{keys: make([]string, 0, n), vals: make([]any, 0, n)}
}

// Len returns the number of members.
func (o *Object) Len() int { return len(o.keys) }

// Keys returns the member names in order. The slice must not be modified.
func (o *Object) Keys() []string { return o.keys }

// At returns the i-th member.
func (o *Object) At(i int) (string, any) { return o.keys[i], o.vals[i] }

// reindex rebuilds the index after members moved.
func (o *Object) reindex() {
	o.index = nil
	if len(o.keys) > smallObject {
		o.index = make(map[string]int, len(o.keys))
		for i, key := range o.keys {
			o.index[key] = i
		}
	}
}

func (o *Object) find(k string) int {
	if o.index != nil {
		if i, ok := o.index[k]; ok {
			return i
		}
		return -1
	}
	for i, key := range o.keys {
		if key == k {
			return i
		}
	}
	return -1
}

// Get returns the value of member k.
func (o *Object) Get(k string) (any, bool) {
	if i := o.find(k); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

// Has reports whether member k exists.
func (o *Object) Has(k string) bool { return o.find(k) >= 0 }

// Set replaces member k in place, or appends it when absent.
func (o *Object) Set(k string, v any) {
	if i := o.find(k); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	if o.index != nil {
		o.index[k] = len(o.keys) - 1
	} else if len(o.keys) > smallObject {
		o.reindex()
	}
}

// Delete removes member k and reports whether it existed.
func (o *Object) Delete(k string) bool {
	i := o.find(k)
	if i < 0 {
		return false
	}
	o.keys = append(o.keys[:i], o.keys[i+1:]...)
	o.vals = append(o.vals[:i], o.vals[i+1:]...)
	o.reindex() // positions shifted
	return true
}

// MarshalJSON encodes the object with its members in order.
func (o *Object) MarshalJSON() ([]byte, error) { return AppendJSON(nil, o) }

// DeepCopy returns a copy of v that shares no containers with v.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case *Object:
		c := &Object{keys: append([]string(nil), t.keys...), vals: make([]any, len(t.vals))}
		for i, x := range t.vals {
			c.vals[i] = DeepCopy(x)
		}
		c.reindex()
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = DeepCopy(x)
		}
		return c
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = DeepCopy(x)
		}
		return c
	default:
		return v
	}
}

// kindOf names a value's JSON type for error messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64, float32, int, int64, int32, uint, uint64, uint32:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case *Object, map[string]any:
		return "object"
	default:
		return "unsupported value"
	}
}
