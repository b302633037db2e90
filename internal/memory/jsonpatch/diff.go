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
		diffArray(p, at, pre, x[pre:len(x)-suf], y[pre:len(y)-suf])
		return
	}
	if !Equal(a, b) {
		*p = append(*p, Operation{Op: "replace", Path: at, Value: b, HasValue: true})
	}
}

// maxEdits bounds the Myers search; beyond it arrays are compared position by position,
// which is still correct, only longer.
const maxEdits = 128

// diffArray diffs the differing middles mx, my of two arrays, whose first element sits at
// index off. It finds a shortest edit script (Myers) so that one removal in a long list is
// one remove, pairs removals with insertions at the same place as in-place diffs, and falls
// back to a position-by-position diff when the lists differ too much.
func diffArray(p *Patch, at Pointer, off int, mx, my []any) {
	script, ok := myers(mx, my, maxEdits)
	if !ok {
		script = script[:0]
		m := min(len(mx), len(my))
		for i := 0; i < m; i++ {
			script = append(script, editDel, editIns)
		}
		for i := m; i < len(mx); i++ {
			script = append(script, editDel)
		}
		for i := m; i < len(my); i++ {
			script = append(script, editIns)
		}
	}
	idx, xi, yi := off, 0, 0
	for i := 0; i < len(script); {
		if script[i] == editKeep {
			idx, xi, yi, i = idx+1, xi+1, yi+1, i+1
			continue
		}
		dels, ins := 0, 0
		for i < len(script) && script[i] != editKeep {
			if script[i] == editDel {
				dels++
			} else {
				ins++
			}
			i++
		}
		pairs := min(dels, ins)
		for j := 0; j < pairs; j++ {
			diff(p, at.Append(strconv.Itoa(idx)), mx[xi], my[yi])
			idx, xi, yi = idx+1, xi+1, yi+1
		}
		for j := pairs; j < dels; j++ { // later elements shift down, so the index stays
			*p = append(*p, Operation{Op: "remove", Path: at.Append(strconv.Itoa(idx))})
			xi++
		}
		for j := pairs; j < ins; j++ {
			*p = append(*p, Operation{Op: "add", Path: at.Append(strconv.Itoa(idx)), Value: my[yi], HasValue: true})
			idx, yi = idx+1, yi+1
		}
	}
}

type edit uint8

const (
	editKeep edit = iota
	editDel
	editIns
)

// myers returns a shortest edit script from a to b, or ok=false when it needs more than
// maxD edits. Memory is O(maxD²), independent of the list lengths.
func myers(a, b []any, maxD int) (script []edit, ok bool) {
	n, m := len(a), len(b)
	ha := make([]uint64, n)
	for i, v := range a {
		ha[i] = hashValue(v)
	}
	hb := make([]uint64, m)
	for i, v := range b {
		hb[i] = hashValue(v)
	}
	eq := func(i, j int) bool { return ha[i] == hb[j] && Equal(a[i], b[j]) }
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d] = v[k] for k in [-d, d] after step d
	for d := 0; d <= maxD && d <= n+m; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insertion
			} else {
				x = v[off+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && eq(x, y) {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(trace, n, m), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

func backtrack(trace [][]int, n, m int) []edit {
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // k in [-(d-1), d-1] at index k+d-1
		get := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := get(pk)
		py := px - pk
		// The move lands next to (px, py); a run of equal elements leads on to (x, y).
		mx, my := px+1, py
		if pk == k+1 {
			mx, my = px, py+1
		}
		for x > mx && y > my {
			rev = append(rev, editKeep)
			x, y = x-1, y-1
		}
		if pk == k+1 {
			rev = append(rev, editIns)
		} else {
			rev = append(rev, editDel)
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, editKeep)
		x, y = x-1, y-1
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
