package jsonpatch

import (
	"fmt"
	"strconv"
	"sync/atomic"
)

// Operation is one decoded JSON Patch operation.
type Operation struct {
	Op       string // add, remove, replace, move, copy, test
	Path     Pointer
	From     Pointer // move and copy only
	Value    any     // add, replace and test only
	HasValue bool
}

// Patch is a decoded JSON Patch document.
type Patch []Operation

// DecodePatch parses and checks a JSON Patch document: an array of operation objects, each
// with a known op, a valid path and the members its op requires. Unknown members are ignored
// (RFC 6902 §4), duplicate members are refused.
func DecodePatch(patch []byte) (Patch, error) {
	v, err := Decode(patch)
	if err != nil {
		return nil, &Error{Op: -1, Reason: "cannot read the patch: " + err.Error(), Kind: KindInvalidPatch}
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, &Error{Op: -1, Reason: fmt.Sprintf("a patch must be a JSON array of operations, got %s", kindOf(v)), Kind: KindInvalidPatch}
	}
	ops := make(Patch, 0, len(arr))
	for i, x := range arr {
		op, err := decodeOp(i, x)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func decodeOp(i int, x any) (Operation, error) {
	bad := func(name, path, format string, args ...any) error {
		return &Error{Op: i, Name: name, Path: path, Reason: fmt.Sprintf(format, args...), Kind: KindInvalidPatch}
	}
	o, ok := x.(*Object)
	if !ok {
		return Operation{}, bad("", "", "an operation must be a JSON object, got %s", kindOf(x))
	}
	var op Operation
	name, ok := o.Get("op")
	if !ok {
		return op, bad("", "", `missing "op" member`)
	}
	if op.Op, ok = name.(string); !ok {
		return op, bad("", "", `"op" must be a string, got %s`, kindOf(name))
	}
	switch op.Op {
	case "add", "remove", "replace", "move", "copy", "test":
	default:
		return op, bad("", "", "unknown op %q (want add, remove, replace, move, copy or test)", op.Op)
	}
	pathV, ok := o.Get("path")
	if !ok {
		return op, bad(op.Op, "", `missing "path" member`)
	}
	pathS, ok := pathV.(string)
	if !ok {
		return op, bad(op.Op, "", `"path" must be a string, got %s`, kindOf(pathV))
	}
	var err error
	if op.Path, err = ParsePointer(pathS); err != nil {
		return op, bad(op.Op, pathS, "%v", err)
	}
	switch op.Op {
	case "add", "replace", "test":
		if op.Value, op.HasValue = o.Get("value"); !op.HasValue {
			return op, bad(op.Op, pathS, `missing "value" member`)
		}
	case "move", "copy":
		fromV, ok := o.Get("from")
		if !ok {
			return op, bad(op.Op, pathS, `missing "from" member`)
		}
		fromS, ok := fromV.(string)
		if !ok {
			return op, bad(op.Op, pathS, `"from" must be a string, got %s`, kindOf(fromV))
		}
		if op.From, err = ParsePointer(fromS); err != nil {
			return op, bad(op.Op, pathS, `"from": %v`, err)
		}
		if op.Op == "move" && op.From.isPrefixOf(op.Path) {
			return op, bad(op.Op, pathS, "cannot move %q into its own child", fromS)
		}
	}
	return op, nil
}

// Validate checks that patch is a well-formed RFC 6902 patch without applying it.
func Validate(patch []byte) error {
	_, err := DecodePatch(patch)
	return err
}

// Apply applies the RFC 6902 patch to doc and returns the new document as compact JSON,
// members in their original order. It is atomic: on any error nothing is returned and doc
// is untouched; the error is an *Error naming the failing operation.
func Apply(doc []byte, patch []byte) ([]byte, error) {
	ops, err := DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	v, err := Decode(doc)
	if err != nil {
		return nil, &Error{Op: -1, Reason: "cannot read the document: " + err.Error(), Kind: KindInvalidDocument}
	}
	if v, err = ops.ApplyTo(v); err != nil {
		return nil, err
	}
	return Encode(v)
}

// ApplyTo applies the patch to a decoded document and returns the new root. The document is
// modified in place (callers that need the original must DeepCopy it first); on error the
// returned root is nil and the document may be partly modified.
func (p Patch) ApplyTo(doc any) (any, error) { return p.apply(doc, false) }

// ApplyPersistent applies the patch without modifying doc: every object and array on the
// path of a change is copied (shallowly), everything else is shared with doc. The cost is
// proportional to the width of the containers on those paths, not to the document's size,
// so a caller that keeps decoded versions can patch a big state cheaply and atomically.
// Values shared this way must never be modified in place afterwards.
func (p Patch) ApplyPersistent(doc any) (any, error) { return p.apply(doc, true) }

func (p Patch) apply(doc any, persistent bool) (any, error) {
	root := doc
	for i, op := range p {
		var err error
		if root, err = applyOp(root, op, persistent); err != nil {
			e := &Error{Op: i, Name: op.Op, Path: op.Path.String(), Reason: err.Error(), Kind: KindPath}
			if _, ok := err.(testFailure); ok {
				e.Kind = KindTestFailed
			}
			return nil, e
		}
	}
	return root, nil
}

type testFailure struct{ msg string }

func (t testFailure) Error() string { return t.msg }

func applyOp(root any, op Operation, cl bool) (any, error) {
	switch op.Op {
	case "add":
		// Values are copied so a Patch stays reusable after later ops modify what it inserted.
		return add(root, op.Path, DeepCopy(op.Value), cl)
	case "remove":
		root, _, err := remove(root, op.Path, cl)
		return root, err
	case "replace":
		if len(op.Path) == 0 {
			return DeepCopy(op.Value), nil
		}
		return update(root, op.Path, 0, cl, func(parent any) (any, error) {
			last := op.Path[len(op.Path)-1]
			switch c := parent.(type) {
			case *Object:
				if !c.Has(last) {
					return nil, fmt.Errorf("no member %q", last)
				}
				c.Set(last, DeepCopy(op.Value))
				return c, nil
			case []any:
				idx, err := arrayIndex(last, len(c), false)
				if err != nil {
					return nil, err
				}
				c[idx] = DeepCopy(op.Value)
				return c, nil
			}
			return nil, notContainer(op.Path[:len(op.Path)-1], parent)
		})
	case "move":
		if op.From.equal(op.Path) {
			_, err := op.From.Get(root)
			return root, fromErr(err)
		}
		root, v, err := remove(root, op.From, cl)
		if err != nil {
			return nil, fromErr(err)
		}
		return add(root, op.Path, v, cl)
	case "copy":
		v, err := op.From.Get(root)
		if err != nil {
			return nil, fromErr(err)
		}
		return add(root, op.Path, DeepCopy(v), cl)
	case "test":
		v, err := op.Path.Get(root)
		if err != nil {
			return nil, err
		}
		if !Equal(v, op.Value) {
			want, _ := Encode(op.Value)
			got, _ := Encode(v)
			return nil, testFailure{fmt.Sprintf("test failed: value is %s, want %s", clip(got), clip(want))}
		}
		return root, nil
	}
	return nil, fmt.Errorf("unknown op %q", op.Op)
}

func fromErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(`"from": %w`, err)
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func notContainer(p Pointer, v any) error {
	return fmt.Errorf("%s is a %s, not an object or array", p.where(), kindOf(v))
}

// update walks to the parent of the last token of full (starting at depth), calls f on the
// parent container and stores its result back, so array slices that grow stay attached.
// With cl set, each container on the way (the parent included) is copied before it changes.
func update(node any, full Pointer, depth int, cl bool, f func(parent any) (any, error)) (any, error) {
	return updateCopy(node, full, depth, cl, true, f)
}

// updateCopy is update; with copyParent false the parent reaches f uncopied (f then owns
// copying it).
func updateCopy(node any, full Pointer, depth int, cl, copyParent bool, f func(parent any) (any, error)) (any, error) {
	if cl && (copyParent || depth < len(full)-1) {
		node = shallowCopy(node)
	}
	if depth == len(full)-1 {
		return f(node)
	}
	tok := full[depth]
	switch c := node.(type) {
	case *Object:
		child, ok := c.Get(tok)
		if !ok {
			return nil, fmt.Errorf("no member %q at %s", tok, full[:depth].where())
		}
		nc, err := updateCopy(child, full, depth+1, cl, copyParent, f)
		if err != nil {
			return nil, err
		}
		c.Set(tok, nc)
		return c, nil
	case []any:
		idx, err := arrayIndex(tok, len(c), false)
		if err != nil {
			return nil, fmt.Errorf("%v at %s", err, full[:depth].where())
		}
		nc, err := updateCopy(c[idx], full, depth+1, cl, copyParent, f)
		if err != nil {
			return nil, err
		}
		c[idx] = nc
		return c, nil
	default:
		return nil, notContainer(full[:depth], node)
	}
}

func add(root any, path Pointer, value any, cl bool) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	last := path[len(path)-1]
	if cl && last == "-" {
		// Appending is the common change to a long list (facts): extend the shared array
		// in place when no other version has extended it, instead of copying it.
		return updateCopy(root, path, 0, cl, false, func(parent any) (any, error) {
			switch c := parent.(type) {
			case *Object:
				o := shallowCopy(c).(*Object)
				o.Set(last, value)
				return o, nil
			case []any:
				return appendShared(c, value), nil
			}
			return nil, notContainer(path[:len(path)-1], parent)
		})
	}
	return update(root, path, 0, cl, func(parent any) (any, error) {
		switch c := parent.(type) {
		case *Object:
			c.Set(last, value)
			return c, nil
		case []any:
			idx, err := arrayIndex(last, len(c), true)
			if err != nil {
				return nil, err
			}
			c = append(c, nil)
			copy(c[idx+1:], c[idx:])
			c[idx] = value
			return c, nil
		}
		return nil, notContainer(path[:len(path)-1], parent)
	})
}

// remove deletes the value at path and returns the new root and the removed value.
func remove(root any, path Pointer, cl bool) (any, any, error) {
	if len(path) == 0 {
		return nil, nil, fmt.Errorf("cannot remove the whole document (use replace with path \"\")")
	}
	last := path[len(path)-1]
	var removed any
	root, err := update(root, path, 0, cl, func(parent any) (any, error) {
		switch c := parent.(type) {
		case *Object:
			v, ok := c.Get(last)
			if !ok {
				return nil, fmt.Errorf("no member %q", last)
			}
			removed = v
			c.Delete(last)
			return c, nil
		case []any:
			idx, err := arrayIndex(last, len(c), false)
			if err != nil {
				return nil, err
			}
			removed = c[idx]
			copy(c[idx:], c[idx+1:])
			c[len(c)-1] = nil
			return c[:len(c)-1], nil
		}
		return nil, notContainer(path[:len(path)-1], parent)
	})
	return root, removed, err
}

// Encode returns the patch as a JSON Patch document.
func (p Patch) Encode() ([]byte, error) {
	buf := []byte{'['}
	for i, op := range p {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"op":`...)
		buf = strconv.AppendQuote(buf, op.Op)
		buf = append(buf, `,"path":`...)
		buf = appendString(buf, op.Path.String())
		if op.Op == "move" || op.Op == "copy" {
			buf = append(buf, `,"from":`...)
			buf = appendString(buf, op.From.String())
		}
		if op.HasValue {
			buf = append(buf, `,"value":`...)
			var err error
			if buf, err = AppendJSON(buf, op.Value); err != nil {
				return nil, err
			}
		}
		buf = append(buf, '}')
	}
	return append(buf, ']'), nil
}

// arrayClaim sits in the last slot of a backing array made by appendShared (beyond every
// slice's length, so never seen as an element) and holds the length of the longest slice
// of that array handed out: only the version that extends exactly that slice may write
// the next slot, every other one copies.
type arrayClaim struct{ n atomic.Int64 }

// appendShared returns c with v appended, leaving c itself unchanged: in place when c's
// backing array has room and no other version has appended to c, else in a new array with
// room to grow.
func appendShared(c []any, v any) []any {
	if cap(c) > len(c)+1 {
		if cl, ok := c[:cap(c)][cap(c)-1].(*arrayClaim); ok && cl.n.CompareAndSwap(int64(len(c)), int64(len(c)+1)) {
			c = c[:len(c)+1]
			c[len(c)-1] = v
			return c
		}
	}
	n := len(c) + 1
	nc := make([]any, n, n+max(n/4, 8)+1)
	copy(nc, c)
	nc[n-1] = v
	cl := &arrayClaim{}
	cl.n.Store(int64(n))
	nc[:cap(nc)][cap(nc)-1] = cl
	return nc
}

// shallowCopy copies a container's top level (arrays get room for one insert).
func shallowCopy(v any) any {
	switch t := v.(type) {
	case *Object:
		c := &Object{keys: append(make([]string, 0, len(t.keys)+1), t.keys...), vals: append(make([]any, 0, len(t.vals)+1), t.vals...)}
		c.reindex()
		return c
	case []any:
		return append(make([]any, 0, len(t)+1), t...)
	}
	return v
}
