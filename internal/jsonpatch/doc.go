// Package jsonpatch implements RFC 6902 JSON Patch and RFC 6901 JSON Pointer by hand,
// because popular Go libraries fail parts of the json-patch-tests corpus (negative and
// leading-zero indices, test without value, test at the "" key).
//
// Documents are decoded into an order-preserving value model so that a patched document
// keeps its members in their original order (new members are appended), numbers keep their
// exact literal text, and duplicate member names are rejected. The value model is:
// nil, bool, json.Number, string, []any and *Object.
package jsonpatch
