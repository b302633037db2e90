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
	Output     string
}

func newCmdCapInvoke(f *Factory) *cobra.Command {
	opts := &CapInvokeOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	cmd := &cobra.Command{
		Use:   "invoke <capability> --thread <id> --json '{…}'",
		Short: "Invoke a capability; prints the artifact_ref and a small preview",
		Long: `Invoke a capability in a thread. Arguments are validated against the capability's
JSON Schema (see relay cap list --json). The full result is stored as an artifact; only its
ref and a bounded preview are printed. Repeated calls with the same arguments in the same
thread are served from the cache (cached: true) until the capability's TTL ends.`,
		Example: `  relay cap invoke retrieval.search --thread $TID --json '{"query":"hello"}'
  relay cap invoke retrieval.search --thread $TID --json '{"query":"\"exact phrase\" rel*","type":"markdown","limit":5}'
  relay cap invoke http.fetch --thread $TID --json '{"url":"https://example.com/"}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Capability = args[0]
			if opts.Thread == "" {
				id, err := threadArg(f, "")
				if err != nil {
					return err
				}
				opts.Thread = id
			}
			if opts.Output != "text" && opts.Output != "json" {
				return Usagef("--output must be text or json, got %q", opts.Output)
			}
			return capInvokeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Thread, "thread", "t", "", "thread id, id prefix or name (default $RELAY_THREAD)")
	cmd.Flags().StringVar(&opts.Args, "json", "{}", "arguments as JSON, @file to read a file, - to read stdin")
	cmd.Flags().BoolVar(&opts.NoCache, "no-cache", false, "run even if a cached result exists")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "text", "text or json (the whole invoke result)")
	return cmd
}

func readArgs(in io.Reader, s string) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case s == "-":
		b, err = io.ReadAll(io.LimitReader(in, 1<<20))
	case strings.HasPrefix(s, "@"):
		b, err = os.ReadFile(s[1:])
	default:
		b = []byte(s)
	}
	if err != nil {
		return nil, fmt.Errorf("read arguments: %w", err)
	}
	if !json.Valid(b) {
		return nil, UsageError(WithHint(errors.New("--json is not valid JSON"), `relay cap invoke retrieval.search --thread <id> --json '{"query":"hello"}'`))
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
	tid, err := resolveThread(ctx, c, opts.Thread)
	if err != nil {
		return err
	}
	out, err := c.Invoke(ctx, client.InvokeRequest{ThreadID: tid, Capability: opts.Capability, Args: args, NoCache: opts.NoCache})
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) {
			switch ae.Code {
			case "invalid_args", "unknown_capability":
				return WithHint(err, "relay cap list --json")
			case "blocked_address":
				return WithHint(err, "set RELAY_FETCH_ALLOW=<cidr> in the daemon's environment (relay down; RELAY_FETCH_ALLOW=… relay up)")
			}
		}
		return apiErr(err, tid)
	}
	if opts.Output == "json" {
		return writeJSON(opts.IO.Out, out)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, out.Preview) != nil {
		compact.Write(out.Preview)
	}
	_, err = fmt.Fprintf(opts.IO.Out, "artifact_ref  %s\ncached        %t\npreview: %s\n", field(out.ArtifactRef), out.Cached, field(compact.String()))
	return err
}
