package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
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

// injectionHints are lower-case pieces every injection phrase contains, one of them at
// least; they avoid the letters k and s, whose case folds include non-ASCII runes
// (K, ſ) that the regexp matches but strings.ToLower does not map to k and s.
var injectionHints = []string{"ignore", "regard", "<|", "t]", "###"}

// Sanitize replaces every prompt-injection phrase in s with [SANITIZED]. Text without any
// hint skips the regexp, which cost ~0.1 ms per KB on every artifact put.
func Sanitize(s string) string {
	lower := strings.ToLower(s)
	for _, h := range injectionHints {
		if strings.Contains(lower, h) {
			return injection().ReplaceAllString(s, "[SANITIZED]")
		}
	}
	return s
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
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// MinShortRef is the shortest abbreviation of a ref that is accepted or shown.
const MinShortRef = 6

// IsRefPrefix reports whether s can abbreviate a ref: MinShortRef to 25 lowercase hex digits.
func IsRefPrefix(s string) bool {
	if len(s) < MinShortRef || len(s) >= 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ShortRef abbreviates key (an artifact's hash) to its shortest prefix, at least MinShortRef
// long, that no other key shares; prev and next are its neighbours in sorted order ("" when
// none). Like a git abbreviation it is unique when made and may need a digit more later.
func ShortRef(ref, prev, next string) string {
	n := max(MinShortRef, commonPrefix(ref, prev)+1, commonPrefix(ref, next)+1)
	if n >= len(ref) {
		return ref
	}
	return ref[:n]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// RefShortener is implemented by stores that can abbreviate refs: ShortRef returns the form
// the header shows for ref in thread id (the full ref when it cannot do better).
type RefShortener interface {
	ShortRef(ctx context.Context, threadID, ref string) (string, error)
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
		if !ValidRef(r) {
			return "", nil, BadRequest("source ref %q is not an artifact ref", r)
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
