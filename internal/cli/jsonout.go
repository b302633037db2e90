package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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

// jsonFlag is --json, which asks every command for JSON output. `relay state patch` and
// `relay cap invoke` used to read their input from --json; until the next release that
// spelling still works, with a notice: `--json VALUE` leaves VALUE among the positional
// arguments (the flag takes no value), `--json=VALUE` lands in Input.
type jsonFlag struct {
	Out   bool
	Input string
}

func (j *jsonFlag) String() string { return strconv.FormatBool(j.Out) }
func (j *jsonFlag) Type() string   { return "bool" }
func (j *jsonFlag) Set(v string) error {
	if b, err := strconv.ParseBool(v); err == nil {
		j.Out = b
		return nil
	}
	j.Input = v
	return nil
}

// addJSONFlag adds --json (JSON output) to cmd and returns its value.
func addJSONFlag(cmd *cobra.Command, usage string) *jsonFlag {
	j := &jsonFlag{}
	cmd.Flags().Var(j, "json", usage)
	cmd.Flags().Lookup("json").NoOptDefVal = "true"
	return j
}

// oldInput finds input given in the old spelling (--json=VALUE, or --json VALUE with VALUE
// among args, recognised by isInput), returns it and the other args, and prints the notice
// naming the new flag. ok is false when the old spelling was not used.
func (j *jsonFlag) oldInput(w io.Writer, args []string, isInput func(string) bool, newFlag string) (input string, rest []string, ok bool) {
	input, rest = j.Input, args
	if input == "" && j.Out {
		for i, a := range args {
			if isInput(a) {
				input, rest = a, append(append([]string{}, args[:i]...), args[i+1:]...)
				break
			}
		}
	}
	if input == "" {
		return "", args, false
	}
	// The old spelling asked for text output: --json here names the input, not the output.
	j.Out = false
	fmt.Fprintf(w, "note: --json VALUE is the old spelling of %s VALUE (--json now asks for JSON output); it works until the next release\n", newFlag)
	return input, rest, true
}

// looksLikeJSONInput reports whether a stray argument is JSON input given the old way: a
// JSON array or object, @file, or - for stdin.
func looksLikeJSONInput(s string) bool {
	t := strings.TrimSpace(s)
	return t == "-" || strings.HasPrefix(t, "@") || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

// jsonInputError describes malformed JSON given in flag as a usage error: where it breaks,
// in the words of encoding/json, plus an example of the right shape.
func jsonInputError(flag string, b []byte, err error, example string) error {
	var se *json.SyntaxError
	msg := err.Error()
	if errors.As(err, &se) {
		msg = fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		msg = "it is empty"
	}
	return WithHint(Usagef("%s is not valid JSON: %s", flag, msg), example)
}

// writeJSONLine writes v as one compact JSON line (JSON Lines output).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(iostreams.Raw(w))
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
