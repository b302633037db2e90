package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// ReportOptions are the inputs of `relay report`.
type ReportOptions struct {
	IO      *iostreams.IOStreams
	Client  func() (*client.Client, error)
	Thread  string
	Format  string
	NoStore bool
}

func newCmdReport(f *Factory) *cobra.Command {
	opts := &ReportOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "report [<thread>] [--format md|json]",
		Short: "What happened in a thread: state, artifacts, timeline, capability calls, token savings",
		Long: `Print a report of a thread: state summary and header, artifacts, the events timeline,
capability calls with cache hits, token savings, and the friends relay ask asked in it (per
friend and model: calls, failures by kind, latency p50/p95, tokens and cost). The report is also stored in the thread
as an artifact (its ref goes to stderr) unless --no-store is given.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := threadOrArg(f, args, opts.Thread)
			if err != nil {
				return err
			}
			opts.Thread = id
			if jsonOut {
				if cmd.Flags().Changed("format") && opts.Format != "json" {
					return Usagef("--json and --format %s ask for two outputs; give one", opts.Format)
				}
				opts.Format = "json"
			}
			if opts.Format != "md" && opts.Format != "json" {
				return Usagef("--format must be md or json, got %q", opts.Format)
			}
			return reportRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.Thread)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON (same as --format json)")
	cmd.Flags().StringVar(&opts.Format, "format", "md", "md or json")
	cmd.Flags().BoolVar(&opts.NoStore, "no-store", false, "do not store the report as an artifact")
	return cmd
}

func reportRun(ctx context.Context, opts *ReportOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	tid, err := workspace.ResolveThread(ctx, c, opts.Thread)
	if err != nil {
		return err
	}
	rep, err := c.BuildReport(ctx, tid, opts.Format, !opts.NoStore)
	if err != nil {
		return apiErr(err, tid)
	}
	body := rep.Body
	if opts.Format == "json" {
		var pretty bytes.Buffer
		if json.Indent(&pretty, body, "", "  ") == nil {
			body = append(pretty.Bytes(), '\n')
		}
	}
	if _, err := opts.IO.Out.Write(body); err != nil {
		return err
	}
	if ref := rep.ArtifactRef; ref != "" {
		fmt.Fprintf(opts.IO.ErrOut, "report stored as artifact %s (relay artifact get %s --thread %s)\n", ref, ref, tid)
	}
	return nil
}
