package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// threadFlag adds --thread, defaulting to $RELAY_THREAD.
func threadFlag(cmd *cobra.Command, f *Factory, p *string) {
	cmd.Flags().StringVarP(p, "thread", "t", "", "thread id, id prefix or name (default $RELAY_THREAD, then the project's thread)")
	_ = f
}

func threadArg(f *Factory, id string) (string, error) {
	id, _, err := f.memory().DefaultArg(id)
	if err != nil {
		return "", WithHint(err, "relay thread use THREAD   (rewrites the project's thread)")
	}
	if id == "" {
		return "", WithHint(Usagef("no thread given; pass --thread ID or set RELAY_THREAD (or give the project one: relay thread use THREAD)"), "relay runs")
	}
	return id, nil
}

// threadOrArg is the thread of a command that also takes it as an optional argument (stats,
// report, export, show, tail): the argument, else the same fallback as every memory command
// (--thread, $RELAY_THREAD, the project's thread).
func threadOrArg(f *Factory, args []string, flag string) (string, error) {
	if len(args) > 0 {
		if flag != "" && flag != args[0] {
			return "", Usagef("two threads given (%q and --thread %q); give one", args[0], flag)
		}
		return args[0], nil
	}
	return threadArg(f, flag)
}

func newCmdState(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Read and patch a thread's versioned state",
		Long: `A thread's state is one JSON document ($schema com.relay.state.v1: facts, constraints,
open_questions, decisions, plan, artifacts, last_actions, metrics). It changes only by
RFC 6902 JSON Patch; every accepted patch makes a new version (state_ref vN).`,
	}
	cmd.AddCommand(newCmdStateHeader(f), newCmdStateGet(f), newCmdStatePatch(f))
	return cmd
}

// StateHeaderOptions are the inputs of `relay state header`.
type StateHeaderOptions struct {
	F        *Factory
	ThreadID string
	Since    string
	JSON     bool
}

func newCmdStateHeader(f *Factory) *cobra.Command {
	opts := &StateHeaderOptions{F: f}
	cmd := &cobra.Command{
		Use:   "header",
		Short: "Print the bounded state header (≤ 2 KB; what agents should read)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return stateHeaderRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print compact JSON (one line)")
	cmd.Flags().StringVar(&opts.Since, "since", "", "print only what changed since this version (v7), or the full header when that is smaller")
	return cmd
}

func stateHeaderRun(ctx context.Context, opts *StateHeaderOptions) error {
	id, err := threadArg(opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	c, id, err := threadClient(ctx, opts.F, id)
	if err != nil {
		return err
	}
	if opts.Since != "" {
		since, ok := parseStateRef(opts.Since)
		if !ok {
			return WithHint(Usagef("--since %q is not a version; use the v of a header you already have, like v7", opts.Since), "relay state header --thread "+id)
		}
		d, err := c.HeaderSince(ctx, id, since)
		if err != nil {
			return apiErr(err, id)
		}
		if d.Delta == nil {
			if since > d.Version {
				fmt.Fprintf(opts.F.IO.ErrOut, "note: v%d is newer than the thread (v%d), so nothing is known of it: this is the full header at v%d (is %s the thread you meant?)\n", since, d.Version, d.Version, id)
			} else {
				fmt.Fprintf(opts.F.IO.ErrOut, "note: full header (v%d); what changed since v%d would not be smaller\n", d.Version, since)
			}
		}
		return printDoc(opts.F.IO.Out, d.Body(), opts.JSON)
	}
	h, truncated, err := c.Header(ctx, id)
	if err != nil {
		return apiErr(err, id)
	}
	if truncated {
		fmt.Fprintln(opts.F.IO.ErrOut, "note: older entries were dropped to keep the header within 2 KB (see \"truncated\")")
	}
	return printDoc(opts.F.IO.Out, h, opts.JSON)
}

// parseStateRef reads a state_ref: v7, V7 or 7.
func parseStateRef(s string) (int, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "v"), "V")
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// printDoc prints a JSON document indented, or compact with asJSON.
func printDoc(w io.Writer, raw []byte, compact bool) error {
	var buf bytes.Buffer
	var err error
	if compact {
		err = json.Compact(&buf, raw)
	} else {
		err = json.Indent(&buf, raw, "", "  ")
	}
	if err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// StateGetOptions are the inputs of `relay state get`.
type StateGetOptions struct {
	F        *Factory
	ThreadID string
	Version  string
	JSON     bool
}

func newCmdStateGet(f *Factory) *cobra.Command {
	opts := &StateGetOptions{F: f}
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Print the full state document, latest or at --version N",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return stateGetRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().StringVar(&opts.Version, "version", "", "read this earlier version, v7 or 7 (default: latest)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print compact JSON (one line)")
	return cmd
}

func stateGetRun(ctx context.Context, opts *StateGetOptions) error {
	id, err := threadArg(opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	version := 0
	if opts.Version != "" {
		n, ok := parseStateRef(opts.Version)
		if !ok {
			return Usagef("--version must be a version like v7 or 7")
		}
		version = n
	}
	c, id, err := threadClient(ctx, opts.F, id)
	if err != nil {
		return err
	}
	doc, err := c.State(ctx, id, version)
	if err != nil {
		return apiErr(err, id)
	}
	return printDoc(opts.F.IO.Out, doc, opts.JSON)
}

// StatePatchOptions are the inputs of `relay state patch`.
type StatePatchOptions struct {
	F        *Factory
	ThreadID string
	Patch    string // --patch
	File     string
	Expected int // version the patch was made against; 0 = the latest
	Author   string
	JSON     bool
}

// patchExample is a whole `relay state patch` command line, the Try of a malformed patch.
const patchExample = `relay state patch --patch '[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"k","value":"v"}}]'`

func newCmdStatePatch(f *Factory) *cobra.Command {
	opts := &StatePatchOptions{F: f}
	var format string
	var jsonOut *jsonFlag
	cmd := &cobra.Command{
		Use:   "patch",
		Short: "Apply an RFC 6902 JSON Patch to the state (all operations or none)",
		Long: `Apply a JSON Patch (an array of operations) to a thread's state, atomically, making
version N+1. Give it with --patch '[…]' or --file FILE (- for stdin); --json prints the result
as JSON.

The patch states the version it was made against: --base N, else the latest version
(read just before sending). If the state moved on in between, the daemon refuses the
patch (409) and nothing changes: re-read the state and retry.`,
		Example: `  relay state patch --thread $TID --patch '[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"phase","value":"done"}}]'
  relay state patch --thread $TID --file patch.json --base 7 --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in, rest, ok := jsonOut.oldInput(f.IO.ErrOut, args, looksLikeJSONInput, "--patch"); ok {
				if opts.Patch != "" {
					return Usagef("give the patch with --patch or --file, not both")
				}
				opts.Patch, args = in, rest
			}
			if len(args) > 0 {
				return argsError(cmd, fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()))
			}
			switch format {
			case "", "text":
			case "json":
				fmt.Fprintln(f.IO.ErrOut, "note: --format json is the old spelling of --json; it works until the next release")
				jsonOut.Out = true
			default:
				return Usagef("--format must be text or json (or use --json)")
			}
			opts.JSON = jsonOut.Out
			return statePatchRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().StringVar(&opts.Patch, "patch", "", "the patch: a JSON array of operations")
	cmd.Flags().StringVar(&opts.File, "file", "", "read the patch from a file (- for stdin)")
	cmd.Flags().IntVar(&opts.Expected, "base", 0, "the version the patch was made against (default: latest)")
	cmd.Flags().StringVar(&opts.Author, "author", "", "who makes the change (recorded in the version history)")
	jsonOut = addJSONFlag(cmd, "print the result {thread_id, version, state_ref, event_id} as JSON")
	cmd.Flags().StringVar(&format, "format", "", "text or json (old spelling of --json)")
	_ = cmd.Flags().MarkHidden("format")
	return cmd
}

func statePatchRun(ctx context.Context, opts *StatePatchOptions) error {
	id, err := threadArg(opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	var patch []byte
	from := "--patch"
	switch {
	case opts.Patch != "" && opts.File != "":
		return Usagef("give the patch with --patch or --file, not both")
	case opts.Patch != "":
		patch = []byte(opts.Patch)
	case opts.File == "-":
		from = "the patch on stdin"
		if patch, err = io.ReadAll(opts.F.IO.In); err != nil {
			return fmt.Errorf("read the patch from stdin: %w", err)
		}
	case opts.File != "":
		from = opts.File
		if patch, err = os.ReadFile(opts.File); err != nil {
			return fmt.Errorf("read the patch: %w", err)
		}
	default:
		return WithHint(Usagef("no patch given"), patchExample)
	}
	if err := checkPatchShape(from, patch); err != nil {
		return err
	}
	if opts.Expected < 0 {
		return Usagef("--base must be a positive version number")
	}
	c, id, err := threadClient(ctx, opts.F, id)
	if err != nil {
		return err
	}
	expected := opts.Expected
	if expected == 0 {
		t, err := c.GetThread(ctx, id)
		if err != nil {
			return apiErr(err, id)
		}
		expected = t.Version
	}
	res, err := c.Patch(ctx, id, patch, expected, opts.Author)
	if err != nil {
		return apiErr(err, id)
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, res)
	}
	return printKV(opts.F, "state_ref", res.StateRef)
}

// checkPatchShape refuses, as bad usage, a patch that is not JSON or not an array of
// operations, before anything is sent: the daemon's words for it are about its HTTP body.
func checkPatchShape(from string, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return jsonInputError(from, b, err, patchExample)
	}
	switch x := v.(type) {
	case []any:
		for i, op := range x {
			if _, ok := op.(map[string]any); !ok {
				return WithHint(Usagef("%s: operation %d is not an object like {\"op\":\"add\",\"path\":\"/facts/-\",\"value\":…}", from, i), patchExample)
			}
		}
		return nil
	case map[string]any:
		if _, isOp := x["op"]; isOp {
			return WithHint(Usagef("%s is one operation, but a patch must be an array of operations: wrap it in [ ]", from), patchExample)
		}
		return WithHint(Usagef("%s is an object, but a patch must be an array of operations ([{\"op\":…,\"path\":…}, …])", from), patchExample)
	}
	return WithHint(Usagef("%s must be an array of operations ([{\"op\":…,\"path\":…}, …])", from), patchExample)
}
