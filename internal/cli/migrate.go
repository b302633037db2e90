package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/migrate"
)

// MigrateOptions are the inputs of `relay migrate`.
type MigrateOptions struct {
	F                   *Factory
	From, To, Artifacts string
	FromArtifacts       string
	JSON                bool
}

func newCmdMigrate(f *Factory) *cobra.Command {
	opts := &MigrateOptions{F: f}
	cmd := &cobra.Command{
		Use:   "migrate --from STORE --to STORE",
		Short: "Copy every thread from one memory store to another and verify the copy",
		Long: `Copy every thread, state version, snapshot, event, artifact, capability call and
agent-to-agent hop count and idempotency key from one store to another, e.g. from the embedded SQLite store to a team's PostgreSQL:

  relay migrate --from sqlite:// --to postgres://relay@db.internal/relay \
      --artifacts 's3://relay-artifacts/team?endpoint=s3.internal:9000'

sqlite:// is the store in $RELAY_HOME (sqlite:///path/to/relay-home names another).
Each thread is written in one transaction, then read back from both stores and compared:
counts and a sha256 digest of every record and artifact body. A thread already in the
destination is verified, not copied again, so an interrupted migration resumes by
running the same command. Stop the daemons writing to the source first; the
destination may be in use. A source that keeps its bodies in a bucket needs
--from-artifacts naming it. Bodies stream from one store to the other, one at a time.
Passwords in URLs are never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.From == "" || opts.To == "" {
				return Usagef("relay migrate needs --from and --to, e.g. --from sqlite:// --to postgres://relay@host/relay")
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "source store URL (sqlite:// or postgres://…)")
	cmd.Flags().StringVar(&opts.To, "to", "", "destination store URL (postgres://… or sqlite://…)")
	cmd.Flags().StringVar(&opts.Artifacts, "artifacts", "", "put the destination's artifact bodies in this bucket (s3://bucket/prefix?endpoint=…)")
	cmd.Flags().StringVar(&opts.FromArtifacts, "from-artifacts", "", "the bucket the source keeps its artifact bodies in, if it has one")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func migrateRun(ctx context.Context, opts *MigrateOptions) error {
	f := opts.F
	home, err := f.Home()
	if err != nil {
		return err
	}
	for _, u := range []string{opts.From, opts.To} {
		if _, err := backend.Kind(u); err != nil {
			return Usagef("%v", err)
		}
	}
	if blob.Redact(opts.From) == blob.Redact(opts.To) {
		return Usagef("--from and --to name the same store")
	}
	src, err := backend.Open(ctx, backend.Config{Home: home, URL: opts.From, Artifacts: opts.FromArtifacts})
	if err != nil {
		return WithHint(fmt.Errorf("open the source store: %w", err), "relay doctor")
	}
	defer src.Close()
	dst, err := backend.Open(ctx, backend.Config{Home: home, URL: opts.To, Artifacts: opts.Artifacts})
	if err != nil {
		return WithHint(fmt.Errorf("open the destination store: %w", err), "relay doctor")
	}
	defer dst.Close()
	fmt.Fprintf(f.IO.ErrOut, "migrating %s -> %s\n", src.Describe().Location, dst.Describe().Location)
	rep, err := migrate.Copy(ctx, src, dst, func(r migrate.Report, id string, copied bool) {
		verb := "verified (already there)"
		if copied {
			verb = "copied and verified"
		}
		fmt.Fprintf(f.IO.ErrOut, "thread %s %s\n", id, verb)
	})
	if err != nil {
		return WithHint(fmt.Errorf("migrate: %w", err), "fix the cause and run the same command again: threads already copied are verified, not copied twice")
	}
	if opts.JSON {
		return writeJSON(f.IO.Out, rep)
	}
	fmt.Fprintf(f.IO.Out, "threads:   %d (%d copied, %d already there)\nversions:  %d\nsnapshots: %d\nartifacts: %d (%s)\nevents:    %d\ncalls:     %d\na2a:       %d hops, %d idempotency keys\nsha256:    %s (same on both sides)\n",
		rep.Threads, rep.Copied, rep.Skipped, rep.Versions, rep.Snapshots, rep.Artifacts, humanBytes(rep.Bytes), rep.Events, rep.Calls, rep.Hops, rep.Keys, rep.Digest)
	return nil
}
