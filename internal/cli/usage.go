package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/relaydev/relay/internal/suggest"
)

// Usage mistakes exit 2 and are worded by relay, with a Try line: cobra's and pflag's own
// messages ("accepts 1 arg(s), received 2", "unknown flag: --x") are rewritten here.

// unknownCommand is the error for an unknown subcommand of cmd, with the closest commands
// (followed by the rest of the arguments) as the Try line.
func unknownCommand(cmd *cobra.Command, name string, rest ...string) error {
	cmd.SuggestionsMinimumDistance = suggest.MaxDistance
	// Only the closest of cobra's candidates: "stauts" is status, not also state and stats.
	sugg := suggest.Closest(name, cmd.SuggestionsFor(name))
	msg := fmt.Sprintf("unknown command %q for %s", name, cmd.CommandPath())
	if len(sugg) == 0 {
		return WithHint(Usagef("%s", msg), cmd.CommandPath()+" --help   (lists its commands)")
	}
	full := make([]string, len(sugg))
	for i, s := range sugg {
		full[i] = strings.Join(append([]string{cmd.CommandPath(), s}, rest...), " ")
	}
	return WithHint(Usagef("%s; did you mean %s?", msg, strings.Join(quoteAll(sugg), " or ")), strings.Join(full, ", or "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// cobra's positional-argument messages (cobra/args.go), compiled on the first
// usage error rather than at every start.
var (
	reNoArgs  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown command "(.*)" for ".*"$`) })
	reExact   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^accepts (\d+) arg\(s\), received (\d+)$`) })
	reAtMost  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^accepts at most (\d+) arg\(s\), received (\d+)$`) })
	reAtLeast = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^requires at least (\d+) arg\(s\), only received (\d+)$`)
	})
	reBetween = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^accepts between (\d+) and (\d+) arg\(s\), received (\d+)$`)
	})
	reInvalid  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^invalid argument "(.*)" for ".*"$`) })
	reRequired = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^required flag\(s\) (.*) not set$`) })
)

// argsError rewrites a cobra argument-count error in relay's words.
func argsError(cmd *cobra.Command, err error) error {
	path := cmd.CommandPath()
	usage := strings.TrimSpace(strings.TrimPrefix(cmd.Use, cmd.Name()))
	want := ""
	if usage != "" {
		want = " (" + usage + ")"
	}
	msg := err.Error()
	switch m := (func() []string {
		for _, re := range []*regexp.Regexp{reNoArgs(), reExact(), reAtMost(), reAtLeast(), reBetween(), reInvalid()} {
			if m := re.FindStringSubmatch(msg); m != nil {
				return append([]string{re.String()}, m[1:]...)
			}
		}
		return nil
	})(); {
	case m == nil:
		msg = err.Error()
	case m[0] == reNoArgs().String():
		msg = fmt.Sprintf("%s takes no arguments, got %q", path, m[1])
	case m[0] == reExact().String():
		msg = fmt.Sprintf("%s takes %s%s, got %s", path, plural(m[1], "argument"), want, m[2])
	case m[0] == reAtMost().String():
		msg = fmt.Sprintf("%s takes at most %s%s, got %s", path, plural(m[1], "argument"), want, m[2])
	case m[0] == reAtLeast().String():
		msg = fmt.Sprintf("%s needs at least %s%s, got %s", path, plural(m[1], "argument"), want, m[2])
	case m[0] == reBetween().String():
		msg = fmt.Sprintf("%s takes %s to %s arguments%s, got %s", path, m[1], m[2], want, m[3])
	case m[0] == reInvalid().String():
		msg = fmt.Sprintf("%s does not take %q", path, m[1])
	}
	return WithHint(Usagef("%s", msg), path+" --help")
}

func plural(n, word string) string {
	if n == "1" {
		return "1 " + word
	}
	return n + " " + word + "s"
}

// flagError rewrites a pflag parse error in relay's words, suggesting a close flag name.
func flagError(cmd *cobra.Command, err error) error {
	// "relay thred new --name x": cobra parses the flags for relay itself, but the mistake
	// is the command (pflag has kept the words before the flag).
	if a := cmd.Flags().Args(); cmd.HasSubCommands() && len(a) > 0 && findSub(cmd, a[0]) == nil {
		return unknownCommand(cmd, a[0], a[1:]...)
	}
	path := cmd.CommandPath()
	hint := path + " --help"
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	var iv *pflag.InvalidValueError
	var is *pflag.InvalidSyntaxError
	var msg string
	switch {
	case errors.As(err, &ne):
		if sh := ne.GetSpecifiedShortnames(); sh != "" {
			msg = fmt.Sprintf("unknown flag -%s for %s", ne.GetSpecifiedName(), path)
		} else {
			msg = fmt.Sprintf("unknown flag --%s for %s", ne.GetSpecifiedName(), path)
			if s := closestFlag(cmd, ne.GetSpecifiedName()); s != "" {
				msg += fmt.Sprintf("; did you mean --%s?", s)
				hint = path + " --" + s + " …, or " + hint
			}
		}
	case errors.As(err, &vr):
		name := "--" + vr.GetSpecifiedName()
		if vr.GetSpecifiedShortnames() != "" {
			name = "-" + vr.GetSpecifiedName()
		}
		msg = fmt.Sprintf("%s needs a value", name)
		if f := vr.GetFlag(); f != nil && f.Usage != "" {
			msg += " (" + f.Usage + ")"
		}
	case errors.As(err, &iv):
		f := iv.GetFlag()
		msg = fmt.Sprintf("invalid value %q for --%s: want %s", iv.GetValue(), f.Name, valueKind(f.Value.Type()))
	case errors.As(err, &is):
		msg = fmt.Sprintf("bad flag syntax %q: flags look like --name or --name=value", is.GetSpecifiedFlag())
	default:
		msg = err.Error()
		if m := reRequired().FindStringSubmatch(msg); m != nil {
			msg = "missing required flag " + strings.ReplaceAll(m[1], `"`, "--")
		}
	}
	return WithHint(Usagef("%s", msg), hint)
}

func valueKind(typ string) string {
	switch typ {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "a whole number"
	case "float64", "float32":
		return "a number"
	case "bool":
		return "true or false"
	case "duration":
		return "a duration like 30s or 5m"
	case "stringSlice", "stringArray":
		return "a comma-separated list"
	}
	return "a " + typ
}

// closestFlag is the flag of cmd nearest to name (within suggestDistance), or "".
func closestFlag(cmd *cobra.Command, name string) string {
	best, bestD := "", suggest.MaxDistance+1
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := suggest.Distance(strings.ToLower(name), f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// newHelpCmd replaces cobra's help command, which prints the root help and exits 0 for
// an unknown topic: here that is a usage error with suggestions.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help about any command: relay help state patch is relay state patch --help.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd := root
			for _, a := range args {
				next := findSub(cmd, a)
				if next == nil {
					if !cmd.HasAvailableSubCommands() {
						return WithHint(Usagef("%s has no command %q", cmd.CommandPath(), a), cmd.CommandPath()+" --help")
					}
					return unknownCommand(cmd, a)
				}
				cmd = next
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd := root
			for _, a := range args {
				if cmd = findSub(cmd, a); cmd == nil {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
			}
			var names []string
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					names = append(names, s.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// findSub is cmd's subcommand called name (or with that alias), or nil.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, s := range cmd.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}
