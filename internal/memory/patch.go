package memory

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

// CheckPatch is the prologue every backend runs on a state patch before storing it: the
// thread id, the body a JSON array of operations, the author's length. It returns how many
// operations there are and the patch compacted (as it is logged and sized).
func CheckPatch(id string, patch []byte, author string) (ops int, compact []byte, err error) {
	if err := CheckThreadID(id); err != nil {
		return 0, nil, err
	}
	n, spaced, isArray := arrayShape(patch)
	if !isArray || !json.Valid(patch) {
		// Not a valid array: decoding names what is wrong (and accepts null as no operations).
		var list []json.RawMessage
		if err := json.Unmarshal(patch, &list); err != nil {
			return 0, nil, &InvalidError{Code: "invalid_patch", Msg: "patch must be a JSON array of operations: " + err.Error(), Op: -1, Err: err}
		}
		n, spaced = len(list), true
	}
	if len([]rune(author)) > MaxNameLen {
		return 0, nil, BadRequest("author is longer than %d characters", MaxNameLen)
	}
	compact = patch
	if spaced {
		var cb bytes.Buffer
		if json.Compact(&cb, patch) == nil {
			compact = cb.Bytes()
		}
	}
	return n, compact, nil
}

// arrayShape counts the elements of b when it is a JSON array and says whether it has
// whitespace outside its strings (compacting it would change it), assuming b is valid
// JSON: json.Valid checks that. Hand-written because decoding the array only to count it
// was a third of CheckPatch, which every patch runs.
func arrayShape(b []byte) (n int, spaced, isArray bool) {
	depth, inString, escaped, empty := 0, false, false, true
	for _, c := range b {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			spaced = true
			continue
		case depth == 0 && c != '[':
			return 0, spaced, false // not an array: let the decoder say what it is
		}
		if depth == 1 && empty && c != ']' {
			empty = false
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		}
	}
	if !empty {
		n++
	}
	return n, spaced, depth == 0
}

// PatchError turns a jsonpatch/statedoc error into an InvalidError with the API code.
func PatchError(err error) error {
	var pe *jsonpatch.Error
	if errors.As(err, &pe) {
		code := "invalid_patch"
		if pe.Kind == jsonpatch.KindTestFailed {
			code = "test_failed"
		}
		return &InvalidError{Code: code, Msg: "cannot apply patch: " + pe.Error(), Op: pe.Op, Path: pe.Path, Err: err}
	}
	return &InvalidError{Code: "invalid_state", Msg: "patch refused: " + err.Error(), Op: -1, Err: err}
}
