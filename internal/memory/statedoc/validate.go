package statedoc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// maxProblems stops validation early: a broken 10,000-fact list needs no 10,000-line error.
const maxProblems = 20

// ArtifactTypes are the artifact types a state may reference.
var ArtifactTypes = []string{"markdown", "json", "html", "text", "binary", "tool_output", "email"}

type field struct {
	name     string
	required bool
	check    func(v any) string // "" when fine, else the reason
}

// itemSchemas describe list items. Items may carry extra members (forward compatible);
// the listed ones must have the right type, and ids must be unique within a list.
var itemSchemas = map[string]struct {
	idField string
	fields  []field
}{
	"facts": {"id", []field{
		{"id", true, nonEmptyString}, {"key", true, nonEmptyString}, {"value", true, anyValue}, {"at", false, timestamp},
	}},
	"constraints": {"id", []field{
		{"id", true, nonEmptyString}, {"description", true, nonEmptyString}, {"severity", false, oneOf("hard", "soft")},
	}},
	"open_questions": {"id", []field{
		{"id", true, nonEmptyString}, {"question", true, nonEmptyString}, {"status", false, oneOf("open", "resolved", "")},
	}},
	"decisions": {"id", []field{
		{"id", true, nonEmptyString}, {"description", true, nonEmptyString},
		{"reason_codes", false, stringArray}, {"evidence_refs", false, stringArray},
		{"confidence", false, unitNumber}, {"at", false, timestamp},
	}},
	"plan": {"id", []field{
		{"id", true, nonEmptyString}, {"step", true, nonEmptyString}, {"status", false, oneOf("pending", "done", "skipped", "")},
	}},
	"artifacts": {"ref", []field{
		{"ref", true, nonEmptyString}, {"type", false, oneOf(ArtifactTypes...)}, {"name", false, str},
	}},
	"last_actions": {"", []field{
		{"description", true, nonEmptyString}, {"at", false, timestamp}, {"result_ref", false, str},
	}},
}

var metricNames = []string{"cache_hits", "cache_misses", "tokens_estimate", "tokens_avoided", "hop_count"}

// problems collects schema violations up to maxProblems.
type problems []Problem

func (p *problems) add(path, format string, args ...any) {
	if len(*p) < maxProblems {
		*p = append(*p, Problem{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
}

func (p problems) full() bool { return len(p) >= maxProblems }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

// ValidateValue validates a decoded state document (see jsonpatch.Decode).
func ValidateValue(v any) error {
	var probs problems
	o, ok := v.(*jsonpatch.Object)
	if !ok {
		probs.add("", "the document must be a JSON object, got %s", typeName(v))
		return probs.err()
	}
	validateTop(o, &probs)
	for _, l := range Lists {
		if items, ok := listOf(o, l, &probs); ok {
			validateList(l, items, &probs)
		}
	}
	return probs.err()
}

var knownMembers = func() map[string]bool {
	m := map[string]bool{"metrics": true}
	for k := range owned {
		m[k] = true
	}
	for _, l := range Lists {
		m[l] = true
	}
	return m
}()

// validateTop checks everything except the lists.
func validateTop(o *jsonpatch.Object, probs *problems) {
	for _, k := range o.Keys() {
		if !knownMembers[k] {
			probs.add("/"+escape(k), "unknown member (allowed: $schema, version, thread_id, updated_at, %s, metrics)", strings.Join(Lists, ", "))
		}
	}
	if s, ok := o.Get("$schema"); !ok {
		probs.add("/$schema", "missing")
	} else if s != Schema {
		probs.add("/$schema", "must be %q, got %s", Schema, show(s))
	}
	if ver, ok := o.Get("version"); !ok {
		probs.add("/version", "missing")
	} else if n, ok := ver.(json.Number); !ok || !positiveInt(string(n)) {
		probs.add("/version", "must be an integer ≥ 1, got %s", show(ver))
	}
	if tid, ok := o.Get("thread_id"); !ok {
		probs.add("/thread_id", "missing")
	} else if s, ok := tid.(string); !ok || s == "" || len(s) > MaxThreadIDBytes {
		probs.add("/thread_id", "must be a non-empty string of at most %d bytes, got %s", MaxThreadIDBytes, show(tid))
	}
	if ts, ok := o.Get("updated_at"); !ok {
		probs.add("/updated_at", "missing")
	} else if r := timestamp(ts); r != "" {
		probs.add("/updated_at", "%s", r)
	}
	if mv, ok := o.Get("metrics"); !ok {
		probs.add("/metrics", "missing")
	} else if m, ok := mv.(*jsonpatch.Object); !ok {
		probs.add("/metrics", "must be an object, got %s", typeName(mv))
	} else {
		for _, k := range metricNames {
			if x, ok := m.Get(k); ok {
				if n, ok := x.(json.Number); !ok || !nonNegativeInt(string(n)) {
					probs.add("/metrics/"+k, "must be an integer ≥ 0, got %s", show(x))
				}
			}
		}
	}
}

// listOf returns list l of o, reporting it when it is missing or not an array.
func listOf(o *jsonpatch.Object, l string, probs *problems) ([]any, bool) {
	lv, ok := o.Get(l)
	if !ok {
		probs.add("/"+l, "missing (it must stay an array; remove items instead of the list)")
		return nil, false
	}
	items, ok := lv.([]any)
	if !ok {
		probs.add("/"+l, "must be an array, got %s", typeName(lv))
		return nil, false
	}
	return items, true
}

// validateItem checks the fields of item i of list l.
func validateItem(l string, i int, it any, probs *problems) {
	io, ok := it.(*jsonpatch.Object)
	if !ok {
		probs.add(itemPath(l, i), "must be an object, got %s", typeName(it))
		return
	}
	for _, f := range itemSchemas[l].fields {
		fv, ok := io.Get(f.name)
		if !ok {
			if f.required {
				probs.add(itemPath(l, i), "missing %q", f.name)
			}
			continue
		}
		if r := f.check(fv); r != "" {
			probs.add(itemPath(l, i)+"/"+f.name, "%s", r)
		}
	}
}

// itemID returns the id (or ref) of a list item, "" when it has none.
func itemID(l string, it any) string {
	field := itemSchemas[l].idField
	io, ok := it.(*jsonpatch.Object)
	if field == "" || !ok {
		return ""
	}
	id, _ := io.Get(field)
	s, _ := id.(string)
	return s
}

func dupProblem(l string, i, j int, id string, probs *problems) {
	f := itemSchemas[l].idField
	probs.add(itemPath(l, i)+"/"+f, "duplicate %s %q (already at /%s/%d; use replace to change it)", f, id, l, j)
}

// validateList checks every item of a list and that ids are unique.
func validateList(l string, items []any, probs *problems) {
	var seen map[string]int
	if itemSchemas[l].idField != "" {
		seen = make(map[string]int, len(items))
	}
	for i, it := range items {
		validateItem(l, i, it, probs)
		if id := itemID(l, it); id != "" {
			if j, dup := seen[id]; dup {
				dupProblem(l, i, j, id, probs)
			} else {
				seen[id] = i
			}
		}
		if probs.full() {
			return
		}
	}
}

func itemPath(l string, i int) string { return "/" + l + "/" + strconv.Itoa(i) }

func anyValue(any) string { return "" }

func str(v any) string {
	if _, ok := v.(string); !ok {
		return "must be a string, got " + typeName(v)
	}
	return ""
}

func nonEmptyString(v any) string {
	if s, ok := v.(string); !ok || s == "" {
		return "must be a non-empty string, got " + show(v)
	}
	return ""
}

func timestamp(v any) string {
	s, ok := v.(string)
	if !ok {
		return "must be an RFC 3339 timestamp string, got " + show(v)
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return fmt.Sprintf("must be an RFC 3339 timestamp like 2026-01-02T15:04:05Z, got %q", s)
	}
	return ""
}

func oneOf(allowed ...string) func(any) string {
	return func(v any) string {
		s, ok := v.(string)
		for _, a := range allowed {
			if ok && s == a {
				return ""
			}
		}
		var names []string
		for _, a := range allowed {
			if a != "" {
				names = append(names, strconv.Quote(a))
			}
		}
		return fmt.Sprintf("must be one of %s, got %s", strings.Join(names, ", "), show(v))
	}
}

func stringArray(v any) string {
	a, ok := v.([]any)
	if !ok {
		return "must be an array of strings, got " + typeName(v)
	}
	for i, x := range a {
		if _, ok := x.(string); !ok {
			return fmt.Sprintf("element %d must be a string, got %s", i, typeName(x))
		}
	}
	return ""
}

func unitNumber(v any) string {
	n, ok := v.(json.Number)
	if ok {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil && f >= 0 && f <= 1 {
			return ""
		}
	}
	return "must be a number from 0 to 1, got " + show(v)
}

func positiveInt(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= 1
}

func nonNegativeInt(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= 0
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case *jsonpatch.Object:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// show renders a value for a message, clipped so one bad fact cannot flood an error.
func show(v any) string {
	if v == nil {
		return "null"
	}
	b, err := jsonpatch.Encode(v)
	if err != nil {
		return typeName(v)
	}
	if len(b) > 60 {
		return typeName(v) + " " + string(b[:57]) + "..."
	}
	return string(b)
}

func escape(k string) string { return jsonpatch.Pointer{k}.String()[1:] }
