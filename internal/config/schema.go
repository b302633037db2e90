package config

import (
	"encoding/json"
	"strings"
)

// Schema returns the JSON Schema (draft 2020-12) of the nested config file,
// generated from the same table that validates it.
func Schema() []byte {
	def := Default("")
	sections := map[string]map[string]any{}
	var order []string
	for _, f := range fields {
		section, key, _ := strings.Cut(f.path, ".")
		if sections[section] == nil {
			sections[section] = map[string]any{}
			order = append(order, section)
		}
		p := map[string]any{"description": f.doc, "default": f.get(def)}
		switch f.kind {
		case kString:
			p["type"] = "string"
			if len(f.enum) > 0 {
				p["enum"] = f.enum
			}
		case kBool:
			p["type"] = "boolean"
		case kInt:
			p["type"] = "integer"
		case kNumber:
			p["type"] = "number"
		}
		if f.min != nil {
			p["minimum"] = *f.min
		}
		if f.max != nil {
			p["maximum"] = *f.max
		}
		sections[section][key] = p
	}
	props := map[string]any{
		"$schema":   map[string]any{"type": "string"},
		"projectId": map[string]any{"type": "string", "minLength": 1, "description": "Must equal the projectId in the LLM's responses."},
	}
	for _, s := range order {
		props[s] = map[string]any{"type": "object", "properties": sections[s]}
	}
	schema := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://github.com/relaydev/relay/relaycode.config.schema.json",
		"title":       "relaycode.config.json",
		"description": "Configuration of relay's apply workflow (relay watch, relay apply).",
		"type":        "object",
		"required":    []string{"projectId"},
		"properties":  props,
	}
	out, _ := json.MarshalIndent(schema, "", "  ") // only maps of strings, numbers and slices: cannot fail
	return append(out, '\n')
}
