package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ArgsError reports arguments that do not match a capability's schema (HTTP 400).
type ArgsError struct {
	Capability string
	// Problems are "path: message" strings, e.g. "/limit: must be <= 50".
	Problems []string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Capability, strings.Join(e.Problems, "; "))
}

// compileSchema compiles a capability's args schema from memory; no network loads.
func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("capability %s: args schema is not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "cap://" + name + "/args.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("capability %s: args schema: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("capability %s: args schema does not compile: %w", name, err)
	}
	return sch, nil
}

// parseArgs decodes args the way the validator expects (numbers kept exact).
func parseArgs(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
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

func validateArgs(name string, sch *jsonschema.Schema, v any) error {
	err := sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgsError{Capability: name, Problems: []string{err.Error()}}
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(ve, &leaves)
	probs := make([]string, 0, len(leaves))
	seen := map[string]bool{}
	for _, l := range leaves {
		p := describe(l)
		if !seen[p] {
			seen[p] = true
			probs = append(probs, p)
		}
	}
	sort.Strings(probs)
	if len(probs) > 5 {
		probs = append(probs[:5], fmt.Sprintf("and %d more", len(probs)-5))
	}
	return &ArgsError{Capability: name, Problems: probs}
}

func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

var printer = message.NewPrinter(language.English)

func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

func describe(e *jsonschema.ValidationError) string {
	path := pointer(e.InstanceLocation)
	var msg string
	switch k := e.ErrorKind.(type) {
	case *kind.Maximum:
		msg = "must be <= " + ratString(k.Want)
	case *kind.Minimum:
		msg = "must be >= " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		msg = "must be < " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		msg = "must be > " + ratString(k.Want)
	case *kind.Type:
		msg = fmt.Sprintf("must be %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Required:
		msg = fmt.Sprintf("missing required property %q", strings.Join(k.Missing, `", "`))
	case *kind.AdditionalProperties:
		msg = fmt.Sprintf("unknown property %q", strings.Join(k.Properties, `", "`))
	case *kind.MaxLength:
		msg = fmt.Sprintf("must be at most %d characters, got %d", k.Want, k.Got)
	case *kind.MinLength:
		msg = fmt.Sprintf("must be at least %d characters, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		msg = fmt.Sprintf("must have at most %d items, got %d", k.Want, k.Got)
	case *kind.MinItems:
		msg = fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got)
	case *kind.Enum:
		ws := make([]string, len(k.Want))
		for i, w := range k.Want {
			b, _ := json.Marshal(w)
			ws[i] = string(b)
		}
		msg = "must be one of " + strings.Join(ws, ", ")
	default:
		msg = e.ErrorKind.LocalizedString(printer)
	}
	return path + ": " + msg
}
