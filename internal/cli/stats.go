package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/relaydev/relay/internal/ask"
	"github.com/relaydev/relay/internal/relayhome"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// StatsOptions are the inputs of `relay stats`.
type StatsOptions struct {
	IO      *iostreams.IOStreams
	Client  func() (*client.Client, error)
	Thread  string
	JSON    bool
	Friends bool
}

func newCmdStats(f *Factory) *cobra.Command {
	opts := &StatsOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	cmd := &cobra.Command{
		Use:   "stats [<thread>]",
		Short: "Token savings and cache hits of a thread",
		Long: `Show how many tokens relay saved in a thread, by relay's one definition (the same
figure as the header's m.saved, relay report and the web UI):

  naive   every artifact pasted into a prompt
  actual  the state header (less its counters) plus the artifact previews agents receive
  avoided naive - actual (negative when relay cost more than it saved)

Counts use a real BPE tokenizer (o200k_base, shipped inside relay); the bytes/4 column is
the rough estimate. "session cache hits" counts since the daemon started.

The thread is the argument, else --thread, $RELAY_THREAD, then the project's thread.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Friends {
				return friendStatsRun(f, opts)
			}
			id, err := threadOrArg(f, args, opts.Thread)
			if err != nil {
				return err
			}
			opts.Thread = id
			return statsRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.Thread)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the figures as JSON")
	cmd.Flags().BoolVar(&opts.Friends, "friends", false, "the relay ask ledger instead: per friend and model, calls, failures by kind, latency p50/p95, tokens and cost")
	return cmd
}

// friendStatsRun prints the relay ask ledger, summed per friend and model.
func friendStatsRun(f *Factory, opts *StatsOptions) error {
	home, err := f.Home()
	if err != nil {
		return WithHint(err, "set RELAY_HOME to a readable directory")
	}
	l := &ask.Ledger{Path: filepath.Join(home, relayhome.AskDir, "ledger.jsonl")}
	entries, err := l.Read()
	if err != nil {
		return WithHint(fmt.Errorf("cannot read the ask ledger: %w", err), "check the permissions of "+l.Path)
	}
	rows := ask.Summarize(entries)
	if opts.JSON {
		if rows == nil {
			rows = []ask.LedgerRow{}
		}
		return writeJSON(opts.IO.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No friend has been asked yet: relay ask --to codex --prompt …")
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FRIEND\tMODEL\tCALLS\tFAILED\tP50\tP95\tTOKENS IN/OUT\tCOST")
	for _, r := range rows {
		c := r.Cells()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", field(r.Backend), field(c.Model), r.Calls, c.Failed, c.P50, c.P95, c.Tokens, c.Cost)
	}
	return tw.Flush()
}

type statsOut struct {
	ThreadID         string `json:"thread_id"`
	Artifacts        int64  `json:"artifacts"`
	NaiveTokens      int64  `json:"naive_tokens"`
	ActualTokens     int64  `json:"actual_tokens"`
	TokensAvoided    int64  `json:"tokens_avoided"`
	CacheHits        int64  `json:"cache_hits"`
	SessionCacheHits int64  `json:"session_cache_hits"`
	Encoding         string `json:"encoding"`
	Estimate         struct {
		NaiveTokens   int64 `json:"naive_tokens"`
		ActualTokens  int64 `json:"actual_tokens"`
		AvoidedTokens int64 `json:"avoided_tokens"`
	} `json:"estimate_bytes_div_4"`
	CapabilityCalls int64 `json:"capability_calls"`
	A2AHops         int64 `json:"a2a_hops"`
}

func statsRun(ctx context.Context, opts *StatsOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	tid, err := workspace.ResolveThread(ctx, c, opts.Thread)
	if err != nil {
		return err
	}
	var s statsOut
	if err := c.Stats(ctx, tid, &s); err != nil {
		return apiErr(err, tid)
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, s)
	}
	w := opts.IO.Out
	row := func(label string, a any, b any) {
		fmt.Fprintf(w, "  %-26s %10v %10v\n", label, a, b)
	}
	row("", s.Encoding, "bytes/4")
	row("artifacts", s.Artifacts, "")
	row("naive tokens (if pasted)", s.NaiveTokens, s.Estimate.NaiveTokens)
	row("actual tokens (via refs)", s.ActualTokens, s.Estimate.ActualTokens)
	row("tokens avoided", s.TokensAvoided, s.Estimate.AvoidedTokens)
	row("cache hits", s.CacheHits, "")
	row("session cache hits", s.SessionCacheHits, "")
	if s.TokensAvoided < 0 {
		fmt.Fprintf(w, "relay cost %d more tokens than pasting here: the artifacts are small, so their previews are the whole content and the header comes on top.\n", -s.TokensAvoided)
	}
	return nil
}
