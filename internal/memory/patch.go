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
	var list []json.RawMessage
	if err := json.Unmarshal(patch, &list); err != nil {
		return 0, nil, &InvalidError{Code: "invalid_patch", Msg: "patch must be a JSON array of operations: " + err.Error(), Op: -1, Err: err}
	}
	if len([]rune(author)) > MaxNameLen {
		return 0, nil, BadRequest("author is longer than %d characters", MaxNameLen)
	}
	var cb bytes.Buffer
	compact = patch
	if json.Compact(&cb, patch) == nil {
		compact = cb.Bytes()
	}
	return len(list), compact, nil
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
