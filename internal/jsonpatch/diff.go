package jsonpatch

import "strconv"

// Diff returns a JSON Patch that turns document a into document b. It favours simple and
// correct over minimal: objects are compared member by member, arrays element by element
// after trimming their common prefix and suffix, and anything else is replaced.
func Diff(a, b []byte) ([]byte, error) {
	va, err := Decode(a)
	if err != nil {
		return nil, &Error{Op: -1, Reason: "cannot read the first document: " + err.Error(), Kind: KindInvalidDocument}
	}
	vb, err := Decode(b)
	if err != nil {
		return nil, &Error{Op: -1, Reason: "cannot read the second document: " + err.Error(), Kind: KindInvalidDocument}
	}
	return DiffValues(va, vb).Encode()
}

// DiffValues is Diff over decoded values.
func DiffValues(a, b any) Patch {
	var p Patch
	diff(&p, Pointer{}, a, b)
	return p
}

func diff(p *Patch, at Pointer, a, b any) {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok {
			break
		}
		for _, k := range x.keys {
			if !y.Has(k) {
				*p = append(*p, Operation{Op: "remove", Path: at.Append(k)})
			}
		}
		for i, k := range x.keys {
			if yv, ok := y.Get(k); ok {
				diff(p, at.Append(k), x.vals[i], yv)
			}
		}
		for i, k := range y.keys {
			if !x.Has(k) {
				*p = append(*p, Operation{Op: "add", Path: at.Append(k), Value: y.vals[i], HasValue: true})
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		pre := 0
		for pre < len(x) && pre < len(y) && Equal(x[pre], y[pre]) {
			pre++
		}
		suf := 0
		for suf < len(x)-pre && suf < len(y)-pre && Equal(x[len(x)-1-suf], y[len(y)-1-suf]) {
			suf++
		}
		mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
		m := min(len(mx), len(my))
		for i := 0; i < m; i++ {
			diff(p, at.Append(strconv.Itoa(pre+i)), mx[i], my[i])
		}
		// Removing at one index repeatedly works because later elements shift down.
		for i := m; i < len(mx); i++ {
			*p = append(*p, Operation{Op: "remove", Path: at.Append(strconv.Itoa(pre + m))})
		}
		for i := m; i < len(my); i++ {
			*p = append(*p, Operation{Op: "add", Path: at.Append(strconv.Itoa(pre + i)), Value: my[i], HasValue: true})
		}
		return
	}
	if !Equal(a, b) {
		*p = append(*p, Operation{Op: "replace", Path: at, Value: b, HasValue: true})
	}
}
