package hosts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// A careful textual JSON editor: it finds the byte span of one member and
// replaces, inserts or removes only that span, so every other byte of a host's
// settings file (key order, spacing, comments in JSONC files) stays as it was.

const maxDepth = 200

type member struct {
	key                        string
	keyStart, valStart, valEnd int
}

type object struct {
	open, close int // offsets of '{' and '}'
	members     []member
}

type jscan struct {
	b     []byte
	i     int
	depth int
}

func (s *jscan) errf(format string, args ...any) error {
	line := 1 + bytes.Count(s.b[:min(s.i, len(s.b))], []byte("\n"))
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// ws skips whitespace and // and /* */ comments (settings files of Gemini CLI
// and Qwen Code may be JSONC).
func (s *jscan) ws() error {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.i++
		case c == '/' && s.i+1 < len(s.b) && s.b[s.i+1] == '/':
			for s.i < len(s.b) && s.b[s.i] != '\n' {
				s.i++
			}
		case c == '/' && s.i+1 < len(s.b) && s.b[s.i+1] == '*':
			end := bytes.Index(s.b[s.i+2:], []byte("*/"))
			if end < 0 {
				return s.errf("unterminated comment")
			}
			s.i += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (s *jscan) str() (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", s.errf("expected a string")
	}
	start := s.i
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			var v string
			if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
				return "", s.errf("bad string: %v", err)
			}
			return v, nil
		case '\n':
			return "", s.errf("newline in a string")
		default:
			s.i++
		}
	}
	return "", s.errf("unterminated string")
}

func (s *jscan) value() error {
	if err := s.ws(); err != nil {
		return err
	}
	if s.i >= len(s.b) {
		return s.errf("unexpected end of file")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		_, err := s.object()
		return err
	case c == '[':
		s.depth++
		defer func() { s.depth-- }()
		if s.depth > maxDepth {
			return s.errf("nested too deeply")
		}
		s.i++
		for first := true; ; first = false {
			if err := s.ws(); err != nil {
				return err
			}
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if !first {
				if s.i >= len(s.b) || s.b[s.i] != ',' {
					return s.errf("expected , or ]")
				}
				s.i++
				if err := s.ws(); err != nil {
					return err
				}
				if s.i < len(s.b) && s.b[s.i] == ']' { // trailing comma (JSONC)
					s.i++
					return nil
				}
			}
			if err := s.value(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := s.str()
		return err
	default:
		start := s.i
		for s.i < len(s.b) && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", s.b[s.i]) >= 0 {
			s.i++
		}
		lit := s.b[start:s.i]
		if len(lit) == 0 || !json.Valid(lit) {
			s.i = start
			return s.errf("unexpected %q", string(s.b[start:min(start+10, len(s.b))]))
		}
		return nil
	}
}

func (s *jscan) object() (object, error) {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		return object{}, s.errf("nested too deeply")
	}
	o := object{open: s.i}
	s.i++
	for first := true; ; first = false {
		if err := s.ws(); err != nil {
			return o, err
		}
		if s.i < len(s.b) && s.b[s.i] == '}' {
			o.close = s.i
			s.i++
			return o, nil
		}
		if !first {
			if s.i >= len(s.b) || s.b[s.i] != ',' {
				return o, s.errf("expected , or }")
			}
			s.i++
			if err := s.ws(); err != nil {
				return o, err
			}
			if s.i < len(s.b) && s.b[s.i] == '}' {
				o.close = s.i
				s.i++
				return o, nil
			}
		}
		m := member{keyStart: s.i}
		k, err := s.str()
		if err != nil {
			return o, err
		}
		m.key = k
		if err := s.ws(); err != nil {
			return o, err
		}
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return o, s.errf("expected : after %q", k)
		}
		s.i++
		if err := s.ws(); err != nil {
			return o, err
		}
		m.valStart = s.i
		if err := s.value(); err != nil {
			return o, err
		}
		m.valEnd = s.i
		o.members = append(o.members, m)
	}
}

// topObject parses a whole document that must be one object.
func topObject(b []byte) (object, error) {
	s := &jscan{b: b}
	if err := s.ws(); err != nil {
		return object{}, err
	}
	if s.i >= len(b) || b[s.i] != '{' {
		return object{}, s.errf("the file is not a JSON object")
	}
	o, err := s.object()
	if err != nil {
		return o, err
	}
	if err := s.ws(); err != nil {
		return o, err
	}
	if s.i != len(b) {
		return o, s.errf("text after the JSON object")
	}
	return o, nil
}

func objectAt(b []byte, at int) (object, error) {
	s := &jscan{b: b, i: at}
	return s.object()
}

func (o object) find(key string) (member, bool) {
	var found member
	ok := false
	for _, m := range o.members {
		if m.key == key {
			found, ok = m, true // the last one wins, as in JSON.parse
		}
	}
	return found, ok
}

// lineIndent is the run of spaces and tabs before offset at on its line.
func lineIndent(b []byte, at int) string {
	start := bytes.LastIndexByte(b[:at], '\n') + 1
	end := start
	for end < at && (b[end] == ' ' || b[end] == '\t') {
		end++
	}
	return string(b[start:end])
}

// indentUnit guesses the file's indentation step from its top-level object.
func indentUnit(b []byte, top object) string {
	if len(top.members) > 0 {
		if in := lineIndent(b, top.members[0].keyStart); in != "" && bytes.Contains(b[top.open:top.members[0].keyStart], []byte("\n")) {
			return in
		}
	}
	return "  "
}

func multiline(b []byte, o object) bool { return bytes.Contains(b[o.open:o.close], []byte("\n")) }

func marshalAt(v any, indent, unit string, pretty bool) ([]byte, error) {
	if !pretty {
		return json.Marshal(v)
	}
	return json.MarshalIndent(v, indent, unit)
}

// GetJSON returns the raw value at path, or found false.
func GetJSON(doc []byte, path ...string) (json.RawMessage, bool, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, false, nil
	}
	o, err := topObject(doc)
	if err != nil {
		return nil, false, err
	}
	for i, key := range path {
		m, ok := o.find(key)
		if !ok {
			return nil, false, nil
		}
		if i == len(path)-1 {
			return json.RawMessage(doc[m.valStart:m.valEnd]), true, nil
		}
		if doc[m.valStart] != '{' {
			return nil, false, fmt.Errorf("%q is not an object", key)
		}
		if o, err = objectAt(doc, m.valStart); err != nil {
			return nil, false, err
		}
	}
	return nil, false, nil
}

// SetJSON sets path (objects made as needed) to v, touching no other bytes.
func SetJSON(doc []byte, v any, path ...string) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("empty path")
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}\n")
	}
	top, err := topObject(doc)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(doc, top)
	o := top
	depthIndent := ""
	for i, key := range path {
		last := i == len(path)-1
		m, ok := o.find(key)
		pretty := multiline(doc, top) || len(top.members) == 0
		memberIndent := depthIndent + unit
		if len(o.members) > 0 && multiline(doc, o) {
			memberIndent = lineIndent(doc, o.members[0].keyStart)
		}
		if ok && !last {
			if doc[m.valStart] != '{' {
				return nil, fmt.Errorf("%q is not an object; fix it by hand", strings.Join(path[:i+1], "."))
			}
			if o, err = objectAt(doc, m.valStart); err != nil {
				return nil, err
			}
			depthIndent = memberIndent
			continue
		}
		// build the value to write: the rest of the path as nested objects
		var val any = v
		for j := len(path) - 1; j > i; j-- {
			val = orderedObject{{path[j], val}}
		}
		if ok { // replace the value in place
			vb, err := marshalAt(val, memberIndent, unit, pretty)
			if err != nil {
				return nil, err
			}
			return splice(doc, m.valStart, m.valEnd, vb), nil
		}
		kb, _ := json.Marshal(key)
		if len(o.members) == 0 {
			if !pretty {
				vb, err := marshalAt(val, "", "", false)
				if err != nil {
					return nil, err
				}
				return splice(doc, o.open+1, o.close, append(append(kb, ':'), vb...)), nil
			}
			vb, err := marshalAt(val, memberIndent, unit, true)
			if err != nil {
				return nil, err
			}
			ins := "\n" + memberIndent + string(kb) + ": " + string(vb) + "\n" + lineIndent(doc, o.open)
			if o.open == top.open {
				ins = "\n" + memberIndent + string(kb) + ": " + string(vb) + "\n"
			}
			return splice(doc, o.open+1, o.close, []byte(ins)), nil
		}
		lastM := o.members[len(o.members)-1]
		if !multiline(doc, o) && !pretty {
			vb, err := marshalAt(val, "", "", false)
			if err != nil {
				return nil, err
			}
			sep := ","
			if bytes.Contains(doc[lastM.keyStart:lastM.valStart], []byte(": ")) {
				return splice(doc, lastM.valEnd, lastM.valEnd, []byte(sep+" "+string(kb)+": "+string(vb))), nil
			}
			return splice(doc, lastM.valEnd, lastM.valEnd, []byte(sep+string(kb)+":"+string(vb))), nil
		}
		vb, err := marshalAt(val, memberIndent, unit, true)
		if err != nil {
			return nil, err
		}
		return splice(doc, lastM.valEnd, lastM.valEnd, []byte(",\n"+memberIndent+string(kb)+": "+string(vb))), nil
	}
	return nil, errors.New("unreachable")
}

// DeleteJSON removes the member at path, every copy of it when the key is
// there more than once (a host reads the last one, so removing one copy
// would leave an earlier one registered); when that leaves its parent object
// empty and dropEmptyParent is set, the parent member goes too (it was made
// for it). found false means there was nothing to remove.
func DeleteJSON(doc []byte, dropEmptyParent bool, path ...string) ([]byte, bool, error) {
	found := false
	for {
		next, ok, err := deleteJSONOnce(doc, dropEmptyParent, path...)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return doc, found, nil
		}
		doc, found = next, true
	}
}

func deleteJSONOnce(doc []byte, dropEmptyParent bool, path ...string) ([]byte, bool, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return doc, false, nil
	}
	top, err := topObject(doc)
	if err != nil {
		return nil, false, err
	}
	objs := []object{top}
	var ms []member
	o := top
	for i, key := range path {
		m, ok := o.find(key)
		if !ok {
			return doc, false, nil
		}
		ms = append(ms, m)
		if i == len(path)-1 {
			break
		}
		if doc[m.valStart] != '{' {
			return doc, false, nil
		}
		if o, err = objectAt(doc, m.valStart); err != nil {
			return nil, false, err
		}
		objs = append(objs, o)
	}
	level := len(path) - 1
	if dropEmptyParent && level > 0 && len(objs[level].members) == 1 && len(objs[level-1].members) > 1 {
		level-- // the parent held only this member: remove the parent
	}
	return removeMember(doc, objs[level], ms[level]), true, nil
}

func removeMember(doc []byte, o object, m member) []byte {
	idx := -1
	for i, x := range o.members {
		if x.keyStart == m.keyStart {
			idx = i
		}
	}
	switch {
	case len(o.members) == 1:
		return splice(doc, o.open+1, o.close, nil)
	case idx > 0:
		return splice(doc, o.members[idx-1].valEnd, m.valEnd, nil)
	default:
		return splice(doc, m.keyStart, o.members[1].keyStart, nil)
	}
}

func splice(b []byte, from, to int, ins []byte) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(ins))
	out = append(out, b[:from]...)
	out = append(out, ins...)
	return append(out, b[to:]...)
}

// orderedObject marshals its members in order (Go maps would sort them).
type orderedObject []kv

type kv struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
