package jsonpatch

// Apply applies the RFC 6902 patch to doc and returns the new document (compact JSON).
// It is atomic: either every operation succeeds or doc is returned unchanged with an *Error.
func Apply(doc []byte, patch []byte) ([]byte, error) {
	return nil, &Error{Op: -1, Reason: "not implemented yet", Kind: KindInvalidPatch}
}

// Validate checks that patch is a well-formed RFC 6902 patch without applying it.
func Validate(patch []byte) error {
	return &Error{Op: -1, Reason: "not implemented yet", Kind: KindInvalidPatch}
}

// Diff returns a JSON Patch that turns document a into document b.
func Diff(a, b []byte) ([]byte, error) {
	return nil, &Error{Op: -1, Reason: "not implemented yet", Kind: KindInvalidDocument}
}
