package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The argument schemas are JSON Schema 2020-12, validated with google/jsonschema-go (the
// library the MCP SDK uses too). The previous library compiled every draft's metaschema in
// its package init, 4 ms and 1.7 MB paid by every relay command, even relay version.

// ArgsError reports arguments that do not match a capability's schema (HTTP 400).
type ArgsError struct {
	Capability string
	// Problems are "path: message" strings, e.g. "/limit: must be <= 50".
	Problems []string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Capability, strings.Join(e.Problems, "; "))
}

// argsSchema is a compiled args schema: the whole, and each top-level property's own
// schema, so a problem is reported at the property it concerns.
type argsSchema struct {
	root  *jsonschema.Schema
	whole *jsonschema.Resolved
	props map[string]*jsonschema.Resolved
}

// compileSchema compiles a capability's args schema from memory; no network loads.
func compileSchema(name string, raw json.RawMessage) (*argsSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("capability %s: args schema is not a JSON Schema: %w", name, err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err == nil {
		if err := checkTypes(doc); err != nil {
			return nil, fmt.Errorf("capability %s: args schema does not compile: %w", name, err)
		}
	}
	opts := &jsonschema.ResolveOptions{BaseURI: "cap://" + name + "/args.json"}
	whole, err := s.Resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("capability %s: args schema does not compile: %w", name, err)
	}
	a := &argsSchema{root: &s, whole: whole, props: map[string]*jsonschema.Resolved{}}
	for p, sub := range s.Properties {
		if sub == nil || sub.Ref != "" || sub.DynamicRef != "" {
			continue // refers elsewhere in the document: reported through the whole schema
		}
		if r, err := sub.Resolve(opts); err == nil {
			a.props[p] = r
		}
	}
	return a, nil
}

var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// checkTypes refuses a "type" that names no JSON type anywhere in a schema document: the
// validator would silently never match it.
func checkTypes(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			switch k {
			case "enum", "const", "default", "examples":
				continue // data, not schemas
			case "type":
				switch ty := x.(type) {
				case string:
					if !jsonTypes[ty] {
						return fmt.Errorf("type %q is not a JSON type (use one of null, boolean, object, array, number, string, integer)", ty)
					}
					continue
				case []any:
					for _, e := range ty {
						if s, _ := e.(string); !jsonTypes[s] {
							return fmt.Errorf("type %v is not a JSON type", e)
						}
					}
					continue
				}
			}
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range t {
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseArgs decodes args, numbers kept exact (json.Number), for the cache key.
func parseArgs(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// schemaDefaults returns the "default" of each top-level property of an object schema.
func schemaDefaults(raw json.RawMessage) map[string]any {
	doc, err := parseArgs(raw)
	if err != nil {
		return nil
	}
	obj, _ := doc.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	out := map[string]any{}
	for k, p := range props {
		if pm, ok := p.(map[string]any); ok {
			if d, ok := pm["default"]; ok {
				out[k] = d
			}
		}
	}
	return out
}

// validateArgs checks v (from parseArgs) against the schema. Each property is checked on
// its own so every wrong property is reported, with its path; the whole schema decides.
func validateArgs(name string, sch *argsSchema, v any) error {
	inst := floats(v)
	err := sch.whole.Validate(inst)
	if err == nil {
		return nil
	}
	var probs []string
	if obj, ok := inst.(map[string]any); ok {
		for _, r := range sch.root.Required {
			if _, ok := obj[r]; !ok {
				probs = append(probs, fmt.Sprintf("/: missing required property %q", r))
			}
		}
		closed := sch.root.AdditionalProperties != nil && sch.root.AdditionalProperties.Not != nil && len(sch.root.PatternProperties) == 0
		for k, val := range obj {
			sub, known := sch.root.Properties[k]
			if !known {
				if closed {
					probs = append(probs, fmt.Sprintf("/: unknown property %q", k))
				}
				continue
			}
			if r := sch.props[k]; r != nil {
				if perr := r.Validate(val); perr != nil {
					probs = append(probs, pointer(k)+": "+describe(sub, val, perr))
				}
			}
		}
	}
	if len(probs) == 0 { // a rule of the whole schema (oneOf, dependencies, …)
		probs = []string{"/: " + leaf(err)}
	}
	sort.Strings(probs)
	if len(probs) > 5 {
		probs = append(probs[:5], fmt.Sprintf("and %d more", len(probs)-5))
	}
	return &ArgsError{Capability: name, Problems: probs}
}

// floats converts json.Number to float64 throughout, the representation the validator
// takes numbers in.
func floats(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return math.Inf(1)
		}
		return f
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = floats(x)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = floats(x)
		}
		return a
	}
	return v
}

func pointer(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return "/" + strings.ReplaceAll(tok, "/", "~1")
}

// describe says in a few words why val fails s, for the keywords capability schemas use;
// anything else gets the validator's own message.
func describe(s *jsonschema.Schema, val any, err error) string {
	if got := typeOf(val); s.Type != "" && !typeMatches(got, s.Type) {
		return fmt.Sprintf("must be %s, got %s", s.Type, got)
	}
	if len(s.Types) > 0 {
		ok := false
		for _, t := range s.Types {
			ok = ok || typeMatches(typeOf(val), t)
		}
		if !ok {
			return fmt.Sprintf("must be %s, got %s", strings.Join(s.Types, " or "), typeOf(val))
		}
	}
	if len(s.Enum) > 0 {
		ws := make([]string, len(s.Enum))
		for i, w := range s.Enum {
			b, _ := json.Marshal(w)
			ws[i] = string(b)
		}
		return "must be one of " + strings.Join(ws, ", ")
	}
	switch x := val.(type) {
	case float64:
		switch {
		case s.Maximum != nil && x > *s.Maximum:
			return "must be <= " + num(*s.Maximum)
		case s.Minimum != nil && x < *s.Minimum:
			return "must be >= " + num(*s.Minimum)
		case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
			return "must be < " + num(*s.ExclusiveMaximum)
		case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
			return "must be > " + num(*s.ExclusiveMinimum)
		}
	case string:
		n := utf8.RuneCountInString(x)
		switch {
		case s.MaxLength != nil && n > *s.MaxLength:
			return fmt.Sprintf("must be at most %d characters, got %d", *s.MaxLength, n)
		case s.MinLength != nil && n < *s.MinLength:
			return fmt.Sprintf("must be at least %d characters, got %d", *s.MinLength, n)
		}
	case []any:
		switch {
		case s.MaxItems != nil && len(x) > *s.MaxItems:
			return fmt.Sprintf("must have at most %d items, got %d", *s.MaxItems, len(x))
		case s.MinItems != nil && len(x) < *s.MinItems:
			return fmt.Sprintf("must have at least %d items, got %d", *s.MinItems, len(x))
		}
	}
	return leaf(err)
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(got, want string) bool { return got == want || got == "integer" && want == "number" }

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// schemaPrefix is the validator's "validating <schema location>: " wrapping.
var schemaPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(validating [^:]*: )+`) })

// leaf is the validator's message without the schema locations it is wrapped in.
func leaf(err error) string { return schemaPrefix().ReplaceAllString(err.Error(), "") }
