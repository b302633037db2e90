// Package statedoc owns the canonical thread state document
// ($schema com.relay.state.v1): creating it, validating it, patching it and deriving its
// bounded header.
//
// The document (member order as written by New):
//
//	$schema        "com.relay.state.v1"                      maintained by relay
//	version        integer ≥ 1                               maintained by relay
//	thread_id      non-empty string ≤ 128 bytes              maintained by relay
//	updated_at     RFC 3339 timestamp                        maintained by relay
//	facts          [{id, key, value (any JSON), at?}]
//	constraints    [{id, description, severity? hard|soft}]
//	open_questions [{id, question, status? open|resolved}]
//	decisions      [{id, description, reason_codes?[], evidence_refs?[], confidence? 0..1, at?}]
//	plan           [{id, step, status? pending|done|skipped}]
//	artifacts      [{ref, type? markdown|json|html|text|binary|tool_output|email, name?}]
//	last_actions   [{description, at?, result_ref?}]
//	metrics        {cache_hits, cache_misses, tokens_estimate, tokens_avoided, hop_count} (integers ≥ 0)
//
// Every list must stay an array; ids (artifact refs) are unique within their list; items
// may carry extra members; unknown top-level members are refused so a mistyped path such
// as /fact cannot silently create a new list.
package statedoc

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// Schema is the value of the document's $schema member.
const Schema = "com.relay.state.v1"

// Lists are the document's list members, in document order.
var Lists = []string{"facts", "constraints", "open_questions", "decisions", "plan", "artifacts", "last_actions"}

// owned members are maintained by relay itself; a patch may test them but not change them.
var owned = map[string]bool{"$schema": true, "version": true, "thread_id": true, "updated_at": true}

// MaxThreadIDBytes bounds thread_id so a header always fits its cap.
const MaxThreadIDBytes = 128

// New returns the empty version-1 state document of a thread, stamped now. The thread id
// must be 1 to MaxThreadIDBytes bytes (a UUID) for the document to validate.
func New(threadID string) []byte { return NewAt(threadID, time.Now()) }

// NewAt is New with an explicit timestamp.
func NewAt(threadID string, at time.Time) []byte {
	o := jsonpatch.NewObject(12)
	o.Set("$schema", Schema)
	o.Set("version", json.Number("1"))
	o.Set("thread_id", threadID)
	o.Set("updated_at", stamp(at))
	for _, l := range Lists {
		o.Set(l, []any{})
	}
	m := jsonpatch.NewObject(5)
	for _, k := range []string{"cache_hits", "cache_misses", "tokens_estimate", "tokens_avoided", "hop_count"} {
		m.Set(k, json.Number("0"))
	}
	o.Set("metrics", m)
	out, err := jsonpatch.Encode(o)
	if err != nil {
		panic(err) // cannot happen: every value above is encodable
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ValidationError lists what makes a document break the state schema.
type ValidationError struct {
	Problems []Problem
}

// Problem is one schema violation at a JSON Pointer location.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("state document does not match " + Schema + ": ")
	for i, p := range e.Problems {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Problems)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if p.Path == "" {
			b.WriteString(p.Reason)
		} else {
			fmt.Fprintf(&b, "%s: %s", p.Path, p.Reason)
		}
	}
	return b.String()
}

// Validate reports whether doc is a valid state document; the error is a *ValidationError
// or, for unreadable JSON, a *jsonpatch.SyntaxError.
func Validate(doc []byte) error {
	v, err := jsonpatch.Decode(doc)
	if err != nil {
		return err
	}
	return ValidateValue(v)
}

// ApplyPatch applies a JSON Patch to a state document atomically. It refuses patches that
// change the members relay maintains ($schema, version, thread_id, updated_at; testing them
// is fine) and results that break the schema, then stamps version and updated_at.
// Errors are *jsonpatch.Error (bad patch, missing path, failed test) or *ValidationError.
func ApplyPatch(doc, patch []byte, version int, updatedAt time.Time) ([]byte, error) {
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	if err := checkOwned(ops); err != nil {
		return nil, err
	}
	v, err := jsonpatch.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("stored state is unreadable: %w", err)
	}
	var oldThread any
	if before, ok := v.(*jsonpatch.Object); ok {
		oldThread, _ = before.Get("thread_id") // read now: ApplyTo works in place
	}
	if v, err = ops.ApplyTo(v); err != nil {
		return nil, err
	}
	if o, ok := v.(*jsonpatch.Object); ok {
		if err := checkThread(oldThread, o); err != nil {
			return nil, err
		}
		stampInto(o, version, updatedAt)
	}
	if err := ValidateValue(v); err != nil {
		return nil, err
	}
	return jsonpatch.Encode(v)
}
