package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// injection matches prompt-injection phrases; whitespace variants are folded so that
// "ignore  previous\ninstructions" cannot slip through. Compiled on first use: package
// init runs for every relay command.
var injection = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)ignore\s+(?:all\s+)?(?:previous|prior|above)\s+instructions|ignore\s+all\s+instructions|disregard\s+(?:all\s+)?(?:previous|prior|above)\s+instructions|<\|\s*(?:system|user|assistant|im_start|im_end)\s*\|>|\[/?INST\]|###\s*(?:instruction|system)`)
})

// injectionHints are lower-case pieces every injection phrase but "### system" and
// "[INST]" contains, one of them at least; they avoid the letters k and s, whose case folds
// include non-ASCII runes (K, ſ) that the regexp matches but strings.ToLower does not map to
// k and s. The ignore/disregard phrases are hinted by their "instructions", not by the
// verbs, which are common in source and notes (the regexp then ran on most 2 KB puts).
var injectionHints = []string{"truction", "<|"}

// Sanitize replaces every prompt-injection phrase in s with [SANITIZED]. Text that cannot
// hold one skips the regexp, which cost ~0.1 ms per KB on every artifact put.
func Sanitize(s string) string {
	if mayInject(s) {
		return injection().ReplaceAllString(s, "[SANITIZED]")
	}
	return s
}

// mayInject reports whether s can hold an injection phrase: it has a hint, a "###"
// followed by "system", or an "[INST]". "###" starts every markdown heading and "t]" is
// common in code, so those two are checked where they occur, by the regexp itself on the
// few bytes a match there can span.
func mayInject(s string) bool {
	lower := strings.ToLower(s)
	for _, h := range injectionHints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	// "### system": any whitespace (the regexp's \s), then at most 8 bytes however cased (ſ is two)
	heading := func(i int) string {
		end := i + 3
		for end < len(s) && strings.IndexByte("\t\n\f\r ", s[end]) >= 0 {
			end++
		}
		return s[i:min(len(s), end+8)]
	}
	// "[/INST]": at most 7 bytes up to its t, then "]"
	inst := func(i int) string { return s[max(0, i-7) : i+2] }
	return injectionAround(s, "###", heading) || injectionAround(s, "t]", inst) || injectionAround(s, "T]", inst)
}

// injectionAround reports whether the injection regexp matches the bytes span returns for
// some occurrence of sep in s.
func injectionAround(s, sep string, span func(i int) string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], sep)
		if i < 0 {
			return false
		}
		if injection().MatchString(span(off + i)) {
			return true
		}
		off += i + 1
	}
}

// MakePreview builds the bounded preview of content of the given type.
func MakePreview(typ string, content []byte) Preview {
	size := int64(len(content))
	p := Preview{Size: size}
	if typ == TypeBinary {
		p.Text = "[binary, " + strconv.FormatInt(size, 10) + " bytes]"
		return p
	}
	if !utf8.Valid(content) {
		p.Text = "[binary data, " + strconv.FormatInt(size, 10) + " bytes]"
		p.Truncated = true
		return p
	}
	p.LineCount = lineCount(content)
	// Sanitize a window larger than the preview so a phrase crossing the cut is still caught.
	window := content
	more := false
	if len(window) > 2*PreviewBytes {
		window, more = window[:2*PreviewBytes], true
	}
	text := Sanitize(string(window))
	const limit = PreviewBytes - len("\n...")
	if len(text) <= PreviewBytes && !more {
		p.Text = text
		return p
	}
	cut := cutRunes(text, limit)
	if i := strings.LastIndexByte(cut, '\n'); i >= limit/2 {
		cut = cut[:i]
	}
	p.Text = cut + "\n..."
	p.Truncated = true
	return p
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		n = len(s)
		// A window cut may have split the last rune; drop the fragment.
		for n > 0 && !utf8.ValidString(s[:n]) && n > len(s)-utf8.UTFMax {
			n--
		}
		return s[:n]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func lineCount(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// ValidType reports whether t is a known artifact type.
func ValidType(t string) bool {
	for _, v := range ArtifactTypes {
		if v == t {
			return true
		}
	}
	return false
}

// DetectType guesses an artifact type from its name and content.
func DetectType(name string, content []byte) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return TypeMarkdown
	case ".json":
		return TypeJSON
	case ".html", ".htm":
		return TypeHTML
	case ".txt", ".log", ".csv":
		return TypeText
	case ".eml":
		return TypeEmail
	case ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".zip", ".gz", ".bin", ".exe", ".so", ".wasm":
		return TypeBinary
	}
	if !utf8.Valid(content) || bytes.IndexByte(content, 0) >= 0 {
		return TypeBinary
	}
	trim := bytes.TrimSpace(content)
	if len(trim) > 0 && (trim[0] == '{' || trim[0] == '[') && json.Valid(trim) {
		return TypeJSON
	}
	head := strings.ToLower(string(trim[:min(len(trim), 64)]))
	if strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") {
		return TypeHTML
	}
	if strings.HasPrefix(head, "# ") || strings.HasPrefix(head, "## ") {
		return TypeMarkdown
	}
	return TypeText
}

// MimeFor returns the mime type stored for an artifact.
func MimeFor(typ string, content []byte) string {
	switch typ {
	case TypeMarkdown:
		return "text/markdown; charset=utf-8"
	case TypeJSON:
		return "application/json"
	case TypeHTML:
		return "text/html; charset=utf-8"
	case TypeText, TypeToolOutput:
		return "text/plain; charset=utf-8"
	case TypeEmail:
		return "message/rfc822"
	}
	switch {
	case bytes.HasPrefix(content, []byte("%PDF-")):
		return "application/pdf"
	case bytes.HasPrefix(content, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(content, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(content, []byte("PK\x03\x04")):
		return "application/zip"
	}
	return "application/octet-stream"
}

// ExtFor returns the mirror file extension of an artifact.
func ExtFor(typ, mime string) string {
	switch typ {
	case TypeMarkdown:
		return ".md"
	case TypeJSON:
		return ".json"
	case TypeHTML:
		return ".html"
	case TypeText, TypeToolOutput:
		return ".txt"
	case TypeEmail:
		return ".eml"
	}
	if strings.Contains(mime, "pdf") {
		return ".pdf"
	}
	return ".bin"
}

var refGen struct {
	sync.Mutex
	last [13]byte
}

// NewRef returns an opaque, time-sortable artifact ref: 48 bits of milliseconds then 56
// random bits, hex; strictly increasing within a process.
func NewRef(now time.Time) string {
	var b [13]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(b[:6], ms[2:])
	_, _ = rand.Read(b[6:])
	refGen.Lock()
	if bytes.Compare(b[:], refGen.last[:]) <= 0 {
		b = refGen.last
		for i := len(b) - 1; i >= 0; i-- {
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	refGen.last = b
	refGen.Unlock()
	return hex.EncodeToString(b[:])
}

// ValidRef reports whether s has the shape of an artifact ref.
func ValidRef(s string) bool {
	return len(s) == RefLen && isHex(s)
}

// RefLen is the length of a full ref (NewRef's 13 bytes in hex).
const RefLen = 26

// An artifact has one ref that relay shows everywhere (put's output, --json, the header,
// artifact ls, events, MCP, the SDKs, the UI): the last ShortRefLen hex digits of its full
// ref. The full ref (RefLen hex: 12 of milliseconds, 14 random) stays the storage key, sorts by
// time and keeps resolving anywhere a ref is taken; the short one is its random tail (the
// leading digits are a timestamp neighbours share), unique store-wide because a put draws
// again while the tail is taken, so it names the artifact without its thread.

// ShortRefLen is the length of the ref relay shows.
const ShortRefLen = 6

// MinShortRef is the shortest prefix of a hash or full ref still resolved within a thread:
// the abbreviations relay showed before refs had one form (older headers and notes hold them).
const MinShortRef = 6

// Short returns the ref relay shows for ref: the last ShortRefLen digits of a full ref;
// anything else (already short, or not a ref) as it is.
func Short(ref string) string {
	if ValidRef(ref) {
		return ref[len(ref)-ShortRefLen:]
	}
	return ref
}

// StoredEventData is the data of the artifact.stored event of a, which a store has just
// drawn its ref for: the ref as relay shows it, and the capability that made it when one did,
// so a follower can tell a capability's result (every search stores one) from what an agent
// or a person stored.
func StoredEventData(a Artifact) []byte {
	d := struct { // keys sorted, the byte form the events stored before have
		Capability string `json:"capability,omitempty"`
		Hash       string `json:"hash"`
		Name       string `json:"name"`
		Ref        string `json:"ref"`
		Size       int64  `json:"size"`
		Type       string `json:"type"`
	}{a.Provenance.Capability, a.Hash, a.Name, Short(a.Ref), a.Size, a.Type}
	b, _ := json.Marshal(d) // strings and an integer always encode
	return b
}

// IsShortRef reports whether s has the shape of the ref relay shows: ShortRefLen lowercase hex.
func IsShortRef(s string) bool { return len(s) == ShortRefLen && isHex(s) }

// IsRefPrefix reports whether s can abbreviate a hash or ref: MinShortRef to 25 lowercase hex digits.
func IsRefPrefix(s string) bool {
	return len(s) >= MinShortRef && len(s) < 26 && isHex(s)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// MaxRefDraws bounds how often a put draws a new ref while its short form is taken; past it
// the ref is kept (the store is near 16.7M artifacts) and its short form is shared, which
// Names then shows as the full ref.
const MaxRefDraws = 16

// SharedShortsFunc reports which of the given short refs name more than one artifact of the
// store (refs from before there was one form, or brought in by an import): those are shown
// in full, so every ref relay prints names one artifact.
type SharedShortsFunc func(ctx context.Context, shorts []string) (map[string]bool, error)

// Rows is the part of a query's result, database/sql's or pgx's, that reading one column takes.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// SharedShorts answers Store.SharedShorts with a store's query: query runs for a non-empty
// batch and returns the short refs that name more than one artifact, one a row, and done to
// release the rows.
func SharedShorts(shorts []string, query func() (rows Rows, done func(), err error)) (map[string]bool, error) {
	if len(shorts) == 0 {
		return nil, nil
	}
	rows, done, err := query()
	if err != nil {
		return nil, fmt.Errorf("read shared short refs: %w", err)
	}
	defer done()
	out := map[string]bool{}
	for rows.Next() {
		var sh string
		if err := rows.Scan(&sh); err != nil {
			return nil, fmt.Errorf("read shared short refs: %w", err)
		}
		out[sh] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read shared short refs: %w", err)
	}
	return out, nil
}

// Names returns the function that turns full refs into the refs relay shows, for a batch of
// refs read together: the short form, or the full ref where the short one is shared. One
// call of shared covers the batch; strings that are not full refs are returned as they are.
func Names(ctx context.Context, shared SharedShortsFunc, refs []string) (func(string) string, error) {
	var shorts []string
	for _, r := range refs {
		if ValidRef(r) {
			shorts = append(shorts, Short(r))
		}
	}
	var taken map[string]bool
	if len(shorts) > 0 && shared != nil {
		var err error
		if taken, err = shared(ctx, shorts); err != nil {
			return nil, fmt.Errorf("name artifact refs: %w", err)
		}
	}
	return func(r string) string {
		if s := Short(r); !taken[s] {
			return s
		}
		return r
	}, nil
}

// Named returns a copy of a with its ref and source refs as relay shows them.
func (a Artifact) Named(name func(string) string) Artifact {
	a.Ref = name(a.Ref)
	if len(a.Provenance.SourceRefs) > 0 {
		refs := make([]string, len(a.Provenance.SourceRefs))
		for i, r := range a.Provenance.SourceRefs {
			refs[i] = name(r)
		}
		a.Provenance.SourceRefs = refs
	}
	return a
}

// OneFound is the artifact a store-wide lookup of ref (FindArtifact) found, or why there is
// not exactly one.
func OneFound(ref string, found []Artifact) (Artifact, error) {
	switch len(found) {
	case 0:
		return Artifact{}, &NotFoundError{What: "artifact", ID: ref}
	case 1:
		return found[0], nil
	}
	full := make([]string, len(found))
	for i, a := range found {
		full[i] = a.Ref + " in thread " + a.ThreadID[:min(8, len(a.ThreadID))]
	}
	return Artifact{}, AmbiguousRef(ref, full, " of the store")
}

// AmbiguousRef is the error for a short ref that names several artifacts where one was
// expected; it lists them by full ref, which always resolves.
func AmbiguousRef(ref string, full []string, where string) error {
	return &InvalidError{Code: "ambiguous_ref", Op: -1, Err: errors.New("ambiguous ref"),
		Msg: fmt.Sprintf("ref %s names several artifacts%s (%s); give the full ref", ref, where, strings.Join(full, ", "))}
}

// CheckPut validates a put before a backend stores it: size (of the whole body), name,
// author and capability lengths, the type (detected from head when empty) and the source
// refs. It returns the type and the source refs (never nil) to store.
func CheckPut(p PutArtifactParams, size int64, head []byte) (typ string, refs []string, err error) {
	return CheckPutLimit(p, size, head, MaxArtifactSize)
}

// CheckPutLimit is CheckPut for a store whose artifacts may be up to limit bytes (a store
// with a bucket: MaxBucketArtifactSize).
func CheckPutLimit(p PutArtifactParams, size int64, head []byte, limit int64) (typ string, refs []string, err error) {
	if size > limit {
		return "", nil, &TooLargeError{What: "the artifact", Limit: limit}
	}
	if len([]rune(p.Name)) > MaxNameLen || strings.ContainsAny(p.Name, "\x00\n\r") {
		return "", nil, BadRequest("artifact name must be at most %d characters on one line", MaxNameLen)
	}
	if len([]rune(p.CreatedBy)) > MaxNameLen || len([]rune(p.Capability)) > MaxNameLen {
		return "", nil, BadRequest("created_by and capability must be at most %d characters", MaxNameLen)
	}
	typ = p.Type
	if typ == "" {
		typ = DetectType(p.Name, head)
	} else if !ValidType(typ) {
		return "", nil, BadRequest("unknown artifact type %q; use one of %s", typ, strings.Join(ArtifactTypes, ", "))
	}
	refs = p.SourceRefs
	if refs == nil {
		refs = []string{}
	}
	for _, r := range refs {
		if !ValidRef(r) && !IsShortRef(r) {
			return "", nil, BadRequest("source ref %q is not an artifact ref (the 6 hex characters relay shows, or a full ref)", r)
		}
	}
	return typ, refs, nil
}

// ArtifactLimiter is a store whose artifacts may be larger than MaxArtifactSize (its bodies
// go to a bucket, streamed, never whole in memory).
type ArtifactLimiter interface {
	MaxArtifactBytes() int64
}

// ArtifactLimit is the largest artifact st takes.
func ArtifactLimit(st Store) int64 {
	if l, ok := st.(ArtifactLimiter); ok {
		return l.MaxArtifactBytes()
	}
	return MaxArtifactSize
}
