package memory

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"
)

// NotFoundError says a thread, version or artifact does not exist.
type NotFoundError struct {
	What string // "thread", "version", "artifact"
	ID   string
}

func (e *NotFoundError) Error() string {
	switch e.What {
	case "thread":
		return fmt.Sprintf("thread %s not found; list threads with `relay runs`", e.ID)
	case "artifact":
		return fmt.Sprintf("artifact %s not found in this thread; list them with `relay artifact ls`", e.ID)
	}
	return fmt.Sprintf("%s %s not found", e.What, e.ID)
}

// ConflictError says a patch was made against a stale version.
type ConflictError struct {
	Expected int
	Current  int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("state is at %s, patch was made against %s; re-read the state and retry",
		StateRef(e.Current), StateRef(e.Expected))
}

// InvalidError says the input is unusable; Code is the API error code.
type InvalidError struct {
	Code string // bad_request, invalid_patch, invalid_state, test_failed
	Msg  string
	Op   int // operation index for patch errors, -1 otherwise
	Path string
	Err  error
}

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Unwrap() error { return e.Err }

// TooLargeError says an input or result exceeds a limit.
type TooLargeError struct {
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return e.What + " is larger than the limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// BadRequest is an InvalidError with the API code bad_request.
func BadRequest(format string, a ...any) error {
	return &InvalidError{Code: "bad_request", Msg: fmt.Sprintf(format, a...), Op: -1}
}

// IsNotFound reports whether err is a *NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// ExistsError says an import would overwrite a thread or artifact already in the store.
type ExistsError struct {
	What string // "thread" or "artifact"
	ID   string
}

func (e *ExistsError) Error() string {
	if e.What == "artifact" {
		return fmt.Sprintf("artifact %s is already in the store; import a copy with --as-new", e.ID)
	}
	return fmt.Sprintf("thread %s already exists; import a copy with --as-new", e.ID)
}

// NameTakenError says another thread already has the name: names are unique per store, so
// that a name always resolves to one thread.
type NameTakenError struct {
	Name     string
	ThreadID string // the thread that has it
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a thread named %q already exists: %s", e.Name, e.ThreadID)
}

// CorruptError says stored data cannot be read back (e.g. a state snapshot that is
// not a state document). It is the data's fault, not a request's or the server's.
type CorruptError struct {
	ThreadID string
	Msg      string
	Err      error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("thread %s cannot be read: %s; export what still reads and start a new thread", e.ThreadID, e.Msg)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// TransientStore is a store whose failures can be temporary: a database server that
// restarts, fails over or runs out of connections. The HTTP API answers such a failure with
// 503 and Retry-After instead of 500, and event streams wait for the store instead of
// ending.
type TransientStore interface {
	// Transient reports whether err, returned by the store, may go away by itself: the
	// same request may succeed shortly. A write that failed so may or may not have been
	// applied.
	Transient(err error) bool
}

// IsTransient reports whether err, returned by st or by a layer over it, is temporary.
func IsTransient(st Store, err error) bool {
	ts, ok := st.(TransientStore)
	return ok && err != nil && ts.Transient(err)
}

// FullStore is a store that can tell a write refused because its storage has no room left
// (a full disk or quota, or the database's own size cap).
type FullStore interface {
	// Full reports whether err, returned by the store, says so. Nothing of the refused
	// write was stored.
	Full(err error) bool
}

// IsFull reports whether err, returned by st or by a layer over it (an upload spooled to a
// temporary file, say), means the storage behind it is full.
func IsFull(st Store, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	fs, ok := st.(FullStore)
	return ok && fs.Full(err)
}

// NoBucketError says an artifact's body is kept in a bucket and the store was opened
// without one: a configuration to fix, not a failure of the store.
type NoBucketError struct {
	Hash string // of the body
}

func (e *NoBucketError) Error() string {
	return fmt.Sprintf("artifact body %.12s is kept in a bucket, and this daemon was started without one; restart it with --artifacts (RELAY_ARTIFACTS, or store.artifacts in config.json) naming the bucket it was stored with", e.Hash)
}
