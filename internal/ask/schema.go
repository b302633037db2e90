package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxSchemaBytes bounds a --schema: a schema is a contract, not a document.
const MaxSchemaBytes = 64 << 10

// VerdictSchema is --verdict's fixed schema: approve or request changes, with
// findings that name a file, a line and a severity. It is strict enough for
// codex's native structured output (every property required, no others).
const VerdictSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["verdict", "summary", "findings"],
  "properties": {
    "verdict": {"type": "string", "enum": ["approve", "request-changes"]},
    "summary": {"type": "string"},
    "findings": {
      "type": "array",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["file", "line", "severity", "title", "detail"],
        "properties": {
          "file": {"type": "string"},
          "line": {"type": ["integer", "null"]},
          "severity": {"type": "string", "enum": ["blocker", "major", "minor", "nit"]},
          "title": {"type": "string"},
          "detail": {"type": "string"}
        }
      }
    }
  }
}`

// Verdict is a --verdict answer, checked against VerdictSchema.
type Verdict struct {
	Verdict  string    `json:"verdict"`
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
	// Derived is set when relay changed the friend's verdict to match its
	// findings (an approve with a blocker or major finding).
	Derived bool `json:"derived,omitempty"`
}

// Finding is one problem a verdict names.
type Finding struct {
	File     string `json:"file"`
	Line     *int   `json:"line"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Detail   string `json:"detail"`
}

// schema is a checked --schema, ready to validate answers.
type schema struct {
	raw      json.RawMessage // compact
	resolved *jsonschema.Resolved
}

// parseSchema checks a schema given as text (from --schema: the file's
// content or inline JSON).
func parseSchema(raw []byte) (*schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > MaxSchemaBytes {
		return nil, usagef("keep the schema under 64 KiB", "Invalid schema: it is %d bytes; max %d bytes", len(raw), MaxSchemaBytes)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, usagef(`pass a JSON Schema object, e.g. --schema '{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}'`,
			"Invalid schema: %v", err)
	}
	rs, err := s.Resolve(nil) // no loader: a remote $ref is refused, never fetched
	if err != nil {
		return nil, usagef("check the schema's $ref and keywords (draft 2020-12 or draft-07)", "Invalid schema: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, usagef("pass a JSON Schema object", "Invalid schema: %v", err)
	}
	return &schema{raw: compact.Bytes(), resolved: rs}, nil
}

// schemaInstruction is added to the request so a friend without native
// structured output knows the shape (and one with it is reminded).
func schemaInstruction(raw json.RawMessage) string {
	return "Respond with JSON only: one JSON value, no prose and no code fences, that matches this JSON Schema exactly:\n" + string(raw)
}

// extractJSON finds the JSON value in an answer: the whole text, else a
// fenced ```json block, else the span from the first { or [ to the last } or ].
func extractJSON(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	try := func(s string) (json.RawMessage, bool) {
		s = strings.TrimSpace(s)
		if s == "" || !json.Valid([]byte(s)) {
			return nil, false
		}
		return json.RawMessage(s), true
	}
	if v, ok := try(t); ok {
		return v, nil
	}
	if i := strings.Index(t, "```"); i >= 0 {
		rest := t[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			if v, ok := try(rest[:j]); ok {
				return v, nil
			}
		}
	}
	start := strings.IndexAny(t, "{[")
	end := strings.LastIndexAny(t, "}]")
	if start >= 0 && end > start {
		if v, ok := try(t[start : end+1]); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("the answer holds no JSON value")
}

// check validates an answer's JSON against the schema.
func (s *schema) check(v json.RawMessage) error {
	var inst any
	if err := json.Unmarshal(v, &inst); err != nil {
		return err
	}
	return s.resolved.Validate(inst)
}

// deriveVerdict reads a checked verdict answer and makes its verdict agree
// with its findings: a blocker or major finding is never an approve.
func deriveVerdict(v json.RawMessage) (*Verdict, json.RawMessage) {
	var vd Verdict
	if json.Unmarshal(v, &vd) != nil {
		return nil, v
	}
	if vd.Findings == nil {
		vd.Findings = []Finding{}
	}
	if vd.Verdict == "approve" {
		for _, f := range vd.Findings {
			if f.Severity == "blocker" || f.Severity == "major" {
				vd.Verdict, vd.Derived = "request-changes", true
				break
			}
		}
	}
	b, err := json.Marshal(vd)
	if err != nil {
		return &vd, v
	}
	return &vd, b
}
