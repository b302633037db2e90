package statedoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Header bounds: what keeps a header small enough to send on every hop.
const (
	MaxHeaderBytes    = 2048
	MaxTopFacts       = 10
	MaxTopConstraints = 5
	MaxOpenQuestions  = 5
	MaxNextSteps      = 5
	MaxArtifactRefs   = 10
	MaxLastActions    = 5
)

// Metrics are the live counters the daemon puts into a header. A zero field falls back to
// the same counter in the document's metrics object.
type Metrics struct {
	CacheHits     int64 `json:"cache_hits"`
	TokensAvoided int64 `json:"tokens_avoided"`
}

// Header returns the bounded header of a state document as compact JSON of at most
// MaxHeaderBytes bytes. It is read by models on every hop, so its encoding is chosen by
// o200k tokens rather than bytes: short member names, empty lists and zero counters left
// out, numbers as numbers, no schema boilerplate. Members, in order:
//
//	t        the thread id's first 8 characters (any unique prefix names a thread)
//	v        the state version (state_ref "v7")
//	facts    newest 10 facts            constraints  first 5 constraints
//	questions first 5 open questions    next         first 5 pending plan steps
//	refs     newest 10 artifacts, each "<ref> <name>" (the ref as the store names it)
//	actions  newest 5 last actions
//	n        {<list>: items the list was chosen from}, only for lists that show fewer
//	cut      {<list>: items the 2 KB cap removed}, only when something was removed
//	m        {"hits": cache hits, "saved": tokens avoided}, positive counters only
//
// Lists keep document order. Over the cap, items go oldest fact first, then oldest last
// action, oldest artifact ref, and finally the last next step, open question and constraint.
func Header(doc []byte, m Metrics) ([]byte, error) {
	h, _, err := HeaderInfo(doc, m)
	return h, err
}

// HeaderInfo is Header that also reports whether the size cap removed anything (the daemon
// signals it with X-Relay-Truncated).
func HeaderInfo(doc []byte, m Metrics) ([]byte, bool, error) {
	h, err := collect(doc, m)
	if err != nil {
		return nil, false, err
	}
	return h.finish()
}

// finish renders the header, dropping items until it fits MaxHeaderBytes.
func (h *header) finish() ([]byte, bool, error) {
	h.compactRefs(h.short)
	out := h.render(nil)
	for len(out) > MaxHeaderBytes {
		if !h.dropOne() {
			return nil, false, fmt.Errorf("state header cannot fit in %d bytes even with every list empty (%d bytes); check thread_id and metrics", MaxHeaderBytes, len(out))
		}
		out = h.render(out[:0])
	}
	return out, len(h.truncated) > 0, nil
}

// header list indexes, in output order.
const (
	hFacts = iota
	hConstraints
	hQuestions
	hSteps
	hArtifacts
	hActions
	nLists
)

var headerNames = [nLists]string{"facts", "constraints", "questions", "next", "refs", "actions"}

// dropOrder lists which header list loses an item next, and from which end.
var dropOrder = []struct {
	list   int
	oldest bool // drop from the front (oldest) rather than the back
}{
	{hFacts, true}, {hActions, true}, {hArtifacts, true}, {hSteps, false}, {hQuestions, false}, {hConstraints, false},
}

type header struct {
	schema, threadID, version []byte
	lists                     [nLists][][]byte
	totals                    [nLists]int
	cacheHits, tokensAvoided  []byte
	truncated                 map[int]int
	short                     func(ref string) string // names artifact refs as relay shows them; nil keeps them
}

func newHeader() *header {
	return &header{schema: []byte(strconv.Quote(Schema)), threadID: []byte(`""`), version: []byte("0"),
		cacheHits: []byte("0"), tokensAvoided: []byte("0")}
}

// override puts the caller's non-zero counters over the document's.
func (h *header) override(m Metrics) {
	if m.CacheHits != 0 {
		h.cacheHits = strconv.AppendInt(nil, m.CacheHits, 10)
	}
	if m.TokensAvoided != 0 {
		h.tokensAvoided = strconv.AppendInt(nil, m.TokensAvoided, 10)
	}
}

func (h *header) dropOne() bool {
	for _, d := range dropOrder {
		l := h.lists[d.list]
		if len(l) == 0 {
			continue
		}
		if d.oldest {
			h.lists[d.list] = l[1:]
		} else {
			h.lists[d.list] = l[:len(l)-1]
		}
		if h.truncated == nil {
			h.truncated = map[int]int{}
		}
		h.truncated[d.list]++
		return true
	}
	return false
}

func (h *header) render(b []byte) []byte {
	b = append(b, `{"t":`...)
	b = append(b, shortThread(h.threadID)...)
	b = append(b, `,"v":`...)
	b = append(b, h.version...)
	for i, name := range headerNames {
		if len(h.lists[i]) == 0 {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":[`...)
		for j, it := range h.lists[i] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, it...)
		}
		b = append(b, ']')
	}
	first := true
	for i, name := range headerNames {
		shown := len(h.lists[i]) + h.truncated[i]
		if h.totals[i] <= shown {
			continue
		}
		if first {
			b = append(b, `,"n":{`...)
			first = false
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(h.totals[i]), 10)
	}
	if !first {
		b = append(b, '}')
	}
	if len(h.truncated) > 0 {
		b = append(b, `,"cut":{`...)
		first := true
		for i, name := range headerNames {
			if n := h.truncated[i]; n > 0 {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = append(b, '"')
				b = append(b, name...)
				b = append(b, `":`...)
				b = strconv.AppendInt(b, int64(n), 10)
			}
		}
		b = append(b, '}')
	}
	// A counter helps the reader only when it is positive: a negative "saved" (a fresh
	// thread whose header costs more than its artifacts) spends tokens on nothing usable.
	hits, saved := positive(h.cacheHits), positive(h.tokensAvoided)
	if hits || saved {
		b = append(b, `,"m":{`...)
		if hits {
			b = append(b, `"hits":`...)
			b = append(b, h.cacheHits...)
		}
		if saved {
			if hits {
				b = append(b, ',')
			}
			b = append(b, `"saved":`...)
			b = append(b, h.tokensAvoided...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// positive reports whether a counter (a JSON integer) is above zero.
func positive(n []byte) bool {
	return len(n) > 0 && n[0] != '-' && !bytes.Equal(n, []byte("0"))
}

// shortThread keeps the first 8 characters of a thread id string (a JSON string literal).
func shortThread(q []byte) []byte {
	if len(q) > 10 && q[0] == '"' && bytes.IndexByte(q[1:9], '\\') < 0 {
		return append(q[:9:9], '"')
	}
	return q
}

// compactRefs rewrites the refs list into "<ref> <name>" strings: a ref costs about 13
// o200k tokens in full and under 4 in the 6-digit form relay shows, and the object form
// adds 8 more.
func (h *header) compactRefs(short func(string) string) {
	for i, it := range h.lists[hArtifacts] {
		var a struct {
			Ref  any `json:"ref"`
			Name any `json:"name"`
		}
		if json.Unmarshal(it, &a) != nil {
			continue // not an object: kept as the document has it
		}
		ref, ok := a.Ref.(string)
		if !ok {
			continue
		}
		if short != nil {
			ref = short(ref)
		}
		s := ref
		if name, ok := a.Name.(string); ok && name != "" {
			s += " " + name
		}
		b, err := json.Marshal(s)
		if err == nil {
			h.lists[hArtifacts][i] = b
		}
	}
}

// compact returns the compact form of one raw JSON value, validating it.
func compact(d []byte, s span) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, d[s.start:s.end]); err != nil {
		return nil, &scanError{s.start, err.Error()}
	}
	return buf.Bytes(), nil
}

func collect(d []byte, m Metrics) (*header, error) {
	h := newHeader()
	// One pass over the document: scalars are remembered, lists are walked in place.
	type listSel struct {
		n, idx int
		newest bool
		keep   func(status string, has bool) bool
	}
	statusIs := func(want string) func(string, bool) bool {
		return func(st string, has bool) bool { return !has || st == "" || st == want }
	}
	sels := map[string]listSel{
		"facts":          {MaxTopFacts, hFacts, true, nil},
		"constraints":    {MaxTopConstraints, hConstraints, false, nil},
		"open_questions": {MaxOpenQuestions, hQuestions, false, statusIs("open")},
		"plan":           {MaxNextSteps, hSteps, false, statusIs("pending")},
		"artifacts":      {MaxArtifactRefs, hArtifacts, true, nil},
		"last_actions":   {MaxLastActions, hActions, true, nil},
	}
	// newest keeps a ring of the last n spans while counting them all.
	newest := func(start int, sel listSel) (int, error) {
		ring := make([]span, sel.n)
		count := 0
		end, err := eachElement(d, start, func(v span) error {
			ring[count%sel.n] = v
			count++
			return nil
		})
		if err != nil {
			return 0, err
		}
		h.totals[sel.idx] = count
		h.lists[sel.idx] = h.lists[sel.idx][:0]
		for i := max(0, count-sel.n); i < count; i++ {
			c, err := compact(d, ring[i%sel.n])
			if err != nil {
				return 0, err
			}
			h.lists[sel.idx] = append(h.lists[sel.idx], c)
		}
		return end, nil
	}
	// oldest keeps the first n items whose status passes keep (when set).
	oldest := func(start int, sel listSel) (int, error) {
		h.totals[sel.idx] = 0
		h.lists[sel.idx] = h.lists[sel.idx][:0]
		return eachElement(d, start, func(v span) error {
			if sel.keep != nil {
				if d[v.start] != '{' {
					return nil
				}
				st, has, err := stringMember(d, v, "status")
				if err != nil {
					return err
				}
				if !sel.keep(st, has) {
					return nil
				}
			}
			h.totals[sel.idx]++
			if len(h.lists[sel.idx]) < sel.n {
				c, err := compact(d, v)
				if err != nil {
					return err
				}
				h.lists[sel.idx] = append(h.lists[sel.idx], c)
			}
			return nil
		})
	}
	root := span{skipSpace(d, 0), len(d)}
	err := eachMember(d, root, func(key []byte, start int) (int, error) {
		k := string(key)
		if sel, ok := sels[k]; ok && start < len(d) && d[start] == '[' {
			if sel.newest {
				return newest(start, sel)
			}
			return oldest(start, sel)
		}
		end, err := skipValue(d, start)
		if err != nil {
			return 0, err
		}
		v := span{start, end}
		switch k {
		case "$schema":
			h.schema, err = compact(d, v)
		case "thread_id":
			h.threadID, err = compact(d, v)
		case "version":
			h.version, err = compact(d, v)
		case "metrics":
			if d[start] == '{' {
				err = eachMember(d, v, func(key []byte, start int) (int, error) {
					end, err := skipValue(d, start)
					if err != nil {
						return 0, err
					}
					switch string(key) {
					case "cache_hits":
						h.cacheHits = numberOr(d[start:end], h.cacheHits)
					case "tokens_avoided":
						h.tokensAvoided = numberOr(d[start:end], h.tokensAvoided)
					}
					return end, err
				})
			}
		}
		return end, err
	})
	if err != nil {
		return nil, err
	}
	h.override(m)
	return h, nil
}

// numberOr returns raw when it is a canonical non-negative JSON integer, else def.
func numberOr(raw, def []byte) []byte {
	if len(raw) == 0 || (raw[0] == '0' && len(raw) > 1) || raw[0] < '0' || raw[0] > '9' {
		return def
	}
	if _, err := strconv.ParseUint(string(raw), 10, 63); err != nil {
		return def
	}
	return raw
}
