// Package jsonpatch implements RFC 6902 JSON Patch and RFC 6901 JSON Pointer by hand,
// because popular Go libraries fail parts of the json-patch-tests corpus (negative and
// leading-zero indices, test without value, test at the "" key).
//
// Documents are decoded into an order-preserving value model so that a patched document
// keeps its members in their original order (new members are appended), numbers keep their
// exact literal text, and duplicate member names are rejected. The value model is:
// nil, bool, json.Number, string, []any and *Object.
//
// Apply works on bytes (decode, apply, encode: cost grows with the document). Callers that
// keep a decoded document use DecodePatch and Patch.ApplyPersistent, which copies only the
// containers on the changed paths and leaves the input intact. Diff produces a patch
// between two documents (Myers on arrays, member by member on objects).
package jsonpatch
