package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

func newCmdCap(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cap",
		Short: "List and invoke capabilities (retrieval.search, http.fetch, plugins)",
	}
	cmd.AddCommand(newCmdCapList(f), newCmdCapInvoke(f))
	return cmd
}

// CapListOptions are the inputs of `relay cap list`.
type CapListOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
	JSON   bool
}

func newCmdCapList(f *Factory) *cobra.Command {
	opts := &CapListOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List available capabilities",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return capListRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print name, description, args_schema, cacheable, cache_ttl_sec as JSON")
	return cmd
}

func capListRun(ctx context.Context, opts *CapListOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return apiErr(err, "")
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, caps)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCACHE\tDESCRIPTION")
	for _, ci := range caps {
		cache := "-"
		if ci.Cacheable {
			cache = fmt.Sprintf("%ds", ci.CacheTTLSec)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", field(ci.Name), cache, field(ci.Description))
	}
	return tw.Flush()
}

// CapInvokeOptions are the inputs of `relay cap invoke`.
type CapInvokeOptions struct {
	IO         *iostreams.IOStreams
	Client     func() (*client.Client, error)
	Capability string
	Thread     string
	Args       string // JSON, @file or - for stdin
	NoCache    bool
	JSON       bool
}

// capArgsExample is a whole `relay cap invoke` command line, the Try of malformed arguments.
const capArgsExample = `relay cap invoke retrieval.search --args '{"query":"hello"}'`

func newCmdCapInvoke(f *Factory) *cobra.Command {
	opts := &CapInvokeOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	var output string
	var jsonOut *jsonFlag
	cmd := &cobra.Command{
		Use:   "invoke <capability> [--args '{…}']",
		Short: "Invoke a capability; prints the artifact_ref and a small preview",
		Long: `Invoke a capability in a thread. Arguments (--args, a JSON object) are validated against
the capability's JSON Schema (see relay cap list --json). The full result is stored as an
artifact; only its ref and a bounded preview are printed (--json: the whole invoke result).
Repeated calls with the same arguments in the same thread are served from the cache
(cached: true) until the capability's TTL ends.`,
		Example: `  relay cap invoke retrieval.search --thread $TID --args '{"query":"hello"}'
  relay cap invoke retrieval.search --thread $TID --args '{"query":"\"exact phrase\" rel*","type":"markdown","limit":5}'
  relay cap invoke http.fetch --thread $TID --args @request.json --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if in, rest, ok := jsonOut.oldInput(f.IO.ErrOut, args, looksLikeJSONInput, "--args"); ok {
				if cmd.Flags().Changed("args") {
					return Usagef("give the arguments with --args, not also with --json")
				}
				opts.Args, args = in, rest
			}
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return argsError(cmd, err)
			}
			opts.Capability = args[0]
			if opts.Thread == "" {
				id, err := threadArg(f, "")
				if err != nil {
					return err
				}
				opts.Thread = id
			}
			switch output {
			case "", "text":
			case "json":
				fmt.Fprintln(f.IO.ErrOut, "note: --output json is the old spelling of --json; it works until the next release")
				jsonOut.Out = true
			default:
				return Usagef("--output must be text or json, got %q (or use --json)", output)
			}
			opts.JSON = jsonOut.Out
			return capInvokeRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.Thread)
	cmd.Flags().StringVar(&opts.Args, "args", "{}", "arguments as a JSON object, @file to read a file, - to read stdin")
	cmd.Flags().BoolVar(&opts.NoCache, "no-cache", false, "run even if a cached result exists")
	jsonOut = addJSONFlag(cmd, "print the whole invoke result as JSON")
	cmd.Flags().StringVarP(&output, "output", "o", "", "text or json (old spelling of --json)")
	_ = cmd.Flags().MarkHidden("output")
	return cmd
}

func readArgs(in io.Reader, s string) (json.RawMessage, error) {
	var b []byte
	var err error
	from := "--args"
	switch {
	case s == "-":
		from = "the arguments on stdin"
		b, err = io.ReadAll(io.LimitReader(in, 1<<20))
	case strings.HasPrefix(s, "@"):
		from = s[1:]
		b, err = os.ReadFile(s[1:])
	default:
		b = []byte(s)
	}
	if err != nil {
		return nil, fmt.Errorf("read arguments: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, jsonInputError(from, b, err, capArgsExample)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, WithHint(Usagef("%s must be a JSON object of named arguments, like {\"query\":\"hello\"}", from), capArgsExample)
	}
	return b, nil
}

func capInvokeRun(ctx context.Context, opts *CapInvokeOptions) error {
	args, err := readArgs(opts.IO.In, opts.Args)
	if err != nil {
		return err
	}
	c, err := opts.Client()
	if err != nil {
		return err
	}
	tid, err := workspace.ResolveThread(ctx, c, opts.Thread)
	if err != nil {
		return err
	}
	out, err := c.Invoke(ctx, client.InvokeRequest{ThreadID: tid, Capability: opts.Capability, Args: args, NoCache: opts.NoCache})
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) {
			switch ae.Code {
			case "unknown_capability":
				if len(ae.DidYouMean) > 0 {
					tries := make([]string, len(ae.DidYouMean))
					for i, n := range ae.DidYouMean {
						tries[i] = "relay cap invoke " + n + " …"
					}
					return WithHint(err, strings.Join(tries, ", or "))
				}
				return WithHint(err, "relay cap list")
			case "invalid_args":
				return WithHint(err, "relay cap list --json")
			case "blocked_address":
				return WithHint(err, "set RELAY_FETCH_ALLOW=<cidr> in the daemon's environment (relay down; RELAY_FETCH_ALLOW=… relay up)")
			}
		}
		return apiErr(err, tid)
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, out)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, out.Preview) != nil {
		compact.Write(out.Preview)
	}
	_, err = fmt.Fprintf(opts.IO.Out, "artifact_ref  %s\ncached        %t\npreview: %s\n", field(out.ArtifactRef), out.Cached, field(compact.String()))
	return err
}
