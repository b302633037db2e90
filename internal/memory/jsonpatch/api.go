package jsonpatch

import (
	"errors"
	"fmt"
)

// Kind classifies an Error so callers (the daemon) can map it to a status code.
type Kind string

const (
	// KindInvalidPatch: the patch document itself is malformed (bad JSON, unknown op, missing member).
	KindInvalidPatch Kind = "invalid_patch"
	// KindInvalidDocument: the target document is not valid JSON.
	KindInvalidDocument Kind = "invalid_document"
	// KindPath: a path or from location does not exist or cannot be used for the operation.
	KindPath Kind = "path"
	// KindTestFailed: a test operation compared unequal.
	KindTestFailed Kind = "test_failed"
)

// Error describes why a patch was refused. Op is the 0-based index of the operation in the
// patch (-1 when the error is not about one operation); Path is the operation's path (or from).
type Error struct {
	Op     int
	Name   string // operation name ("add", "remove", …) when known
	Path   string
	Reason string
	Kind   Kind
}

func (e *Error) Error() string {
	var s string
	if e.Op >= 0 {
		if e.Name != "" {
			s = fmt.Sprintf("operation %d (%s): ", e.Op, e.Name)
		} else {
			s = fmt.Sprintf("operation %d: ", e.Op)
		}
	}
	if e.Path != "" || e.Kind == KindPath || e.Kind == KindTestFailed {
		s += fmt.Sprintf("path %q: ", e.Path)
	}
	return s + e.Reason
}

// IsKind reports whether err is (or wraps) an *Error of the given kind.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}
