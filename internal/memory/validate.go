package memory

import (
	"github.com/google/uuid"
	"strings"
)

// MaxEventTypeLen bounds an event type.
const MaxEventTypeLen = 100

// ValidEventType reports whether t can name an event: a letter, then letters,
// digits and . _ : - (e.g. "state.patched", "cap.invoked"). Event types are
// written into Server-Sent Events frames and terminal lines, so spaces,
// newlines and control characters are never allowed.
func ValidEventType(t string) bool {
	if t == "" || len(t) > MaxEventTypeLen || !isAlpha(t[0]) {
		return false
	}
	for i := 1; i < len(t); i++ {
		c := t[i]
		if !isAlpha(c) && !(c >= '0' && c <= '9') && strings.IndexByte("._:-", c) < 0 {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// ValidMime reports whether m is a media type in the strict form relay stores
// and serves: type "/" subtype (RFC 6838 restricted names, lowercase), then
// optional "; key=value" parameters of token characters, 255 bytes at most.
func ValidMime(m string) bool {
	if m == "" || len(m) > 255 {
		return false
	}
	typ, params, _ := strings.Cut(m, ";")
	major, minor, ok := strings.Cut(typ, "/")
	if !ok || !restrictedName(major) || !restrictedName(minor) {
		return false
	}
	if params == "" {
		return !strings.HasSuffix(m, ";")
	}
	for _, p := range strings.Split(params, ";") {
		p = strings.TrimPrefix(p, " ")
		k, v, ok := strings.Cut(p, "=")
		if !ok || !restrictedName(k) || !mimeToken(v) {
			return false
		}
	}
	return true
}

// restrictedName is RFC 6838's restricted-name, lowercase only.
func restrictedName(s string) bool {
	if s == "" || len(s) > 127 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') && strings.IndexByte("!#$&-^_.+", c) < 0 {
			return false
		}
	}
	return true
}

func mimeToken(s string) bool {
	if s == "" || len(s) > 127 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && strings.IndexByte("!#$&-^_.+%*'~|`", c) < 0 {
			return false
		}
	}
	return true
}

// ActiveMime reports whether a browser would run code from content of mime m
// (HTML, SVG, XML, scripts): such content is served as text/plain.
func ActiveMime(m string) bool {
	typ, _, _ := strings.Cut(strings.ToLower(m), ";")
	typ = strings.TrimSpace(typ)
	switch typ {
	case "text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml",
		"text/javascript", "application/javascript", "application/ecmascript", "text/ecmascript",
		"application/x-javascript", "text/xsl", "application/xslt+xml", "application/pdf",
		"multipart/x-mixed-replace", "text/vtt", "application/wasm":
		return true
	}
	return strings.HasSuffix(typ, "+xml") || strings.Contains(typ, "script") || strings.Contains(typ, "html")
}

// CheckThreadID refuses an id that is not a UUID before any backend looks it up.
func CheckThreadID(id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return BadRequest("thread id %q is not a UUID; list threads with `relay runs`", id)
	}
	return nil
}
