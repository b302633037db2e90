package jsonpatch

import "errors"

// Pointer is a parsed RFC 6901 JSON Pointer: its reference tokens, already unescaped.
// The empty Pointer refers to the whole document.
type Pointer []string

// ParsePointer parses the JSON-string representation of a pointer ("" or "/a/b~1c").
func ParsePointer(s string) (Pointer, error) { return nil, errors.New("not implemented yet") }

// Get returns the value p refers to in doc.
func (p Pointer) Get(doc any) (any, error) { return nil, errors.New("not implemented yet") }
