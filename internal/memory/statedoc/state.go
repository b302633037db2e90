package statedoc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// State is a decoded, validated state document held in memory. Patching it copies only the
// containers a patch touches and re-validates only the items that changed, so a patch to a
// 10,000-fact state costs about what it changes rather than a decode, validate and encode
// of the whole document. A State is immutable and safe for concurrent use.
type State struct {
	root *jsonpatch.Object

	once sync.Once
	raw  []byte
	err  error

	ids *idCounts // counts of item ids per list, handed on from patch to patch (nil: none yet)
}

// idCounts counts the items of each list by id, so that the duplicate-id check of a patch
// costs what the patch changes instead of a scan of the whole list (a 10,000-fact state
// made every append scan 10,000 facts). It belongs to one State at a time: Patch takes it
// from the state it patches and hands it to the result, so the usual chain of patches to
// the newest state keeps one map; patching any other state builds its own.
type idCounts struct {
	owner atomic.Pointer[State]
	m     map[string]map[string]int // list → id → items with that id
}

func countIDs(root *jsonpatch.Object) *idCounts {
	c := &idCounts{m: map[string]map[string]int{}}
	for _, l := range Lists {
		if itemSchemas[l].idField == "" {
			continue
		}
		v, _ := root.Get(l)
		items, _ := v.([]any)
		c.m[l] = countList(l, items)
	}
	return c
}

func countList(l string, items []any) map[string]int {
	m := make(map[string]int, len(items))
	for _, it := range items {
		if id := itemID(l, it); id != "" {
			m[id]++
		}
	}
	return m
}

// takeIDs returns s's id counts for the patch being built on s, or builds them.
func (s *State) takeIDs() *idCounts {
	if c := s.ids; c != nil && c.owner.CompareAndSwap(s, nil) {
		return c
	}
	return countIDs(s.root)
}

// Parse decodes and fully validates a state document.
func Parse(doc []byte) (*State, error) {
	v, err := jsonpatch.Decode(doc)
	if err != nil {
		return nil, err
	}
	if err := ValidateValue(v); err != nil {
		return nil, err
	}
	return &State{root: v.(*jsonpatch.Object)}, nil
}

// Version returns the document's version.
func (s *State) Version() int {
	v, _ := s.root.Get("version")
	n, _ := v.(json.Number)
	i, _ := strconv.Atoi(string(n))
	return i
}

// ThreadID returns the document's thread_id.
func (s *State) ThreadID() string {
	v, _ := s.root.Get("thread_id")
	id, _ := v.(string)
	return id
}

// Value returns the decoded document; it is shared and must not be modified.
func (s *State) Value() *jsonpatch.Object { return s.root }

// JSON returns the compact document, encoded once on first use.
func (s *State) JSON() ([]byte, error) {
	s.once.Do(func() { s.raw, s.err = jsonpatch.Encode(s.root) })
	return s.raw, s.err
}

// Patch returns the state after applying patch, stamped with version and updatedAt; s is
// unchanged. It accepts and refuses exactly the patches ApplyPatch does and returns the
// same document.
func (s *State) Patch(patch []byte, version int, updatedAt time.Time) (*State, error) {
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	if err := checkOwned(ops); err != nil {
		return nil, err
	}
	v, err := ops.ApplyPersistent(s.root)
	if err != nil {
		return nil, err
	}
	o, ok := v.(*jsonpatch.Object)
	if !ok {
		return nil, ValidateValue(v)
	}
	oldThread, _ := s.root.Get("thread_id")
	if err := checkThread(oldThread, o); err != nil {
		return nil, err
	}
	if o == s.root { // only tests: copy the top level before stamping it
		o = shallow(o)
	}
	stampInto(o, version, updatedAt)
	ids := s.takeIDs()
	if err := validateChange(s.root, o, ids); err != nil {
		return nil, err // ids may be half updated: dropped, s builds new ones if patched again
	}
	next := &State{root: o, ids: ids}
	ids.owner.Store(next)
	return next, nil
}

func shallow(o *jsonpatch.Object) *jsonpatch.Object {
	c := jsonpatch.NewObject(o.Len())
	for i := 0; i < o.Len(); i++ {
		c.Set(o.At(i))
	}
	return c
}

func stampInto(o *jsonpatch.Object, version int, at time.Time) {
	o.Set("version", json.Number(strconv.Itoa(version)))
	o.Set("updated_at", stamp(at))
}

// checkOwned refuses operations that would change a member relay maintains.
func checkOwned(ops jsonpatch.Patch) error {
	for i, op := range ops {
		changed := []jsonpatch.Pointer{op.Path}
		switch op.Op {
		case "test":
			continue
		case "move":
			changed = append(changed, op.From)
		}
		for _, p := range changed {
			if len(p) > 0 && owned[p[0]] {
				return &jsonpatch.Error{Op: i, Name: op.Op, Path: p.String(), Kind: jsonpatch.KindPath,
					Reason: fmt.Sprintf("%q is maintained by relay and cannot be patched (patch the lists instead)", p[0])}
			}
		}
	}
	return nil
}

// checkThread refuses a whole-document replace that would move the state to another thread.
func checkThread(old any, after *jsonpatch.Object) error {
	if old == nil {
		return nil
	}
	if tid, _ := after.Get("thread_id"); !jsonpatch.Equal(tid, old) {
		return &ValidationError{Problems: []Problem{{Path: "/thread_id", Reason: "is maintained by relay and cannot be changed"}}}
	}
	return nil
}

// smallChange is how many changed items of one list are checked against the others one by
// one; more than that and the whole list is validated with an id map.
const smallChange = 8

// validateChange validates after, knowing that before was valid and that unchanged parts
// are shared with it (ApplyPersistent): lists that are the same slice are skipped, and in
// a changed list only items that are not the very same object as before are checked.
// ids holds the id counts of before's lists and is updated to after's.
func validateChange(before, after *jsonpatch.Object, ids *idCounts) error {
	var probs problems
	validateTop(after, &probs)
	for _, l := range Lists {
		items, ok := listOf(after, l, &probs)
		if !ok {
			continue
		}
		oldV, _ := before.Get(l)
		old, _ := oldV.([]any)
		if sameSlice(old, items) {
			continue
		}
		pre := 0
		if len(old) > 0 && len(items) > len(old) && &old[0] == &items[0] {
			pre = len(old) // appended in place (ApplyPersistent): the old items are the same
		}
		for pre < len(old) && pre < len(items) && sameItem(old[pre], items[pre]) {
			pre++
		}
		suf := 0
		for suf < len(old)-pre && suf < len(items)-pre && sameItem(old[len(old)-1-suf], items[len(items)-1-suf]) {
			suf++
		}
		changed := len(items) - pre - suf
		if changed > smallChange {
			validateList(l, items, &probs)
			if ids.m[l] != nil {
				ids.m[l] = countList(l, items)
			}
			continue
		}
		counts := ids.m[l]
		if counts == nil { // a list without ids
			for i := pre; i < pre+changed; i++ {
				validateItem(l, i, items[i], &probs)
			}
			continue
		}
		for i := pre; i < len(old)-suf; i++ {
			if id := itemID(l, old[i]); id != "" {
				if counts[id]--; counts[id] <= 0 {
					delete(counts, id)
				}
			}
		}
		dup := false
		for i := pre; i < pre+changed; i++ {
			validateItem(l, i, items[i], &probs)
			if id := itemID(l, items[i]); id != "" {
				counts[id]++
				dup = dup || counts[id] > 1
			}
		}
		if !dup {
			continue
		}
		// Rare: find where each duplicate is, for the message.
		for i := pre; i < pre+changed; i++ {
			id := itemID(l, items[i])
			if id == "" {
				continue
			}
			for j, other := range items {
				if j != i && itemID(l, other) == id {
					if j < i {
						dupProblem(l, i, j, id, &probs)
					} else {
						dupProblem(l, j, i, id, &probs)
					}
					break
				}
			}
		}
	}
	return probs.err()
}

func sameSlice(a, b []any) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameItem reports whether two list items are the same object (not merely equal).
func sameItem(a, b any) bool {
	x, ok1 := a.(*jsonpatch.Object)
	y, ok2 := b.(*jsonpatch.Object)
	return ok1 && ok2 && x == y
}

// Header returns the bounded header of the state, like the package-level Header.
func (s *State) Header(m Metrics) ([]byte, bool, error) {
	h, err := collectValue(s.root, m)
	if err != nil {
		return nil, false, err
	}
	return h.finish()
}

func encodeItems(list []any) ([][]byte, error) {
	out := make([][]byte, 0, len(list))
	for _, it := range list {
		b, err := jsonpatch.Encode(it)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// collectValue is collect over a decoded document.
func collectValue(o *jsonpatch.Object, m Metrics) (*header, error) {
	h := newHeader()
	for k, dst := range map[string]*[]byte{"$schema": &h.schema, "thread_id": &h.threadID, "version": &h.version} {
		if v, ok := o.Get(k); ok {
			b, err := jsonpatch.Encode(v)
			if err != nil {
				return nil, err
			}
			*dst = b
		}
	}
	if mv, ok := o.Get("metrics"); ok {
		if mo, ok := mv.(*jsonpatch.Object); ok {
			for k, dst := range map[string]*[]byte{"cache_hits": &h.cacheHits, "tokens_avoided": &h.tokensAvoided} {
				if n, ok := mo.Get(k); ok {
					if num, ok := n.(json.Number); ok {
						*dst = numberOr([]byte(num), *dst)
					}
				}
			}
		}
	}
	h.override(m)
	list := func(name string) []any {
		v, _ := o.Get(name)
		l, _ := v.([]any)
		return l
	}
	statusOK := func(it any, want string) bool {
		io, ok := it.(*jsonpatch.Object)
		if !ok {
			return false
		}
		st, has := io.Get("status")
		if !has || st == nil {
			return true
		}
		s, ok := st.(string)
		return ok && (s == "" || s == want)
	}
	var err error
	set := func(idx int, items []any, total int) {
		if err != nil {
			return
		}
		h.totals[idx] = total
		h.lists[idx], err = encodeItems(items)
	}
	newest := func(idx int, l []any, n int) { set(idx, l[max(0, len(l)-n):], len(l)) }
	oldest := func(idx int, l []any, n int) { set(idx, l[:min(n, len(l))], len(l)) }
	filtered := func(idx int, l []any, n int, want string) {
		var keep []any
		total := 0
		for _, it := range l {
			if statusOK(it, want) {
				total++
				if len(keep) < n {
					keep = append(keep, it)
				}
			}
		}
		set(idx, keep, total)
	}
	newest(hFacts, list("facts"), MaxTopFacts)
	oldest(hConstraints, list("constraints"), MaxTopConstraints)
	filtered(hQuestions, list("open_questions"), MaxOpenQuestions, "open")
	filtered(hSteps, list("plan"), MaxNextSteps, "pending")
	newest(hArtifacts, list("artifacts"), MaxArtifactRefs)
	newest(hActions, list("last_actions"), MaxLastActions)
	return h, err
}
