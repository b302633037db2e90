package cli

import (
	"encoding/json"
	"io"

	"github.com/relaydev/relay/internal/iostreams"
)

// writeJSON prints v as indented JSON: the --json output of every command.
// It bypasses terminal escaping: encoding/json escapes every C0 control, and
// --json promises the values byte for byte.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(iostreams.Raw(w))
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// field is one value of a human-readable line or table: every control
// character, newline and tab in it is escaped so text from a thread, an
// answer or a fetched page cannot drive the terminal or forge lines and
// columns. --json prints the exact value.
func field(s string) string { return iostreams.EscapeLine(s) }
