package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blobgc"
	"github.com/relaydev/relay/internal/memory/client"
)

func newCmdArtifact(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "artifact",
		Short: "Store content once and pass its ref instead of the text",
	}
	cmd.AddCommand(newCmdArtifactPut(f), newCmdArtifactGet(f), newCmdArtifactLs(f), newCmdArtifactGC(f))
	return cmd
}

// ArtifactPutOptions are the inputs of `relay artifact put`.
type ArtifactPutOptions struct {
	F          *Factory
	ThreadID   string
	Path       string
	Type       string
	Name       string
	CreatedBy  string
	Capability string
	JSON       bool
}

func newCmdArtifactPut(f *Factory) *cobra.Command {
	opts := &ArtifactPutOptions{F: f}
	cmd := &cobra.Command{
		Use:   "put <file|->",
		Short: "Store a file (or stdin) as an artifact and print its ref",
		Long: `Store content as an artifact of the thread and print its artifact_ref.
The type (markdown, json, html, text, binary, tool_output, email) is detected when not
given. Identical content in a thread is stored once: the existing ref is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			return artifactPutRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().StringVar(&opts.Type, "type", "", "artifact type (default: detected)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "name to record (default: the file's base name)")
	cmd.Flags().StringVar(&opts.CreatedBy, "created-by", "", "provenance: who made it (default: $USER via relay)")
	cmd.Flags().StringVar(&opts.Capability, "capability", "", "provenance: the capability that produced it")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the artifact's metadata as JSON")
	return cmd
}

func artifactPutRun(ctx context.Context, opts *ArtifactPutOptions) error {
	id, err := threadArg(opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	if opts.Type != "" && !memory.ValidType(opts.Type) {
		return Usagef("--type %q is not one of %v", opts.Type, memory.ArtifactTypes)
	}
	var body io.Reader
	name := opts.Name
	if opts.Path == "-" {
		body = opts.F.IO.In
	} else {
		fh, err := os.Open(opts.Path)
		if err != nil {
			return fmt.Errorf("read the artifact: %w", err)
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil {
			if st.IsDir() {
				return Usagef("%s is a directory; put one file at a time", opts.Path)
			}
			// The daemon knows its store's limit (50 MiB in a database, 5 GiB with a
			// bucket); only what no store takes is refused before sending.
			if st.Size() > memory.MaxBucketArtifactSize {
				return WithHint(fmt.Errorf("%s is %d bytes; artifacts are limited to %d bytes", opts.Path, st.Size(), memory.MaxBucketArtifactSize), "split it, or keep it outside relay and store a link")
			}
		}
		body = fh
		if name == "" {
			name = filepath.Base(opts.Path)
		}
	}
	createdBy := opts.CreatedBy
	if createdBy == "" {
		createdBy = "cli"
		if u := opts.F.Getenv("USER"); u != "" {
			createdBy = "cli:" + u
		}
	}
	c, id, err := threadClient(ctx, opts.F, id)
	if err != nil {
		return err
	}
	a, err := c.PutArtifact(ctx, id, client.PutArtifactParams{Name: name, Type: opts.Type, CreatedBy: createdBy, Capability: opts.Capability, Content: body})
	if err != nil {
		return apiErr(err, id)
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, a)
	}
	if a.Deduplicated {
		fmt.Fprintln(opts.F.IO.ErrOut, "identical content was already stored in this thread; reusing its ref")
	}
	return printKV(opts.F, "artifact_ref", a.Ref)
}

// ArtifactGetOptions are the inputs of `relay artifact get`.
type ArtifactGetOptions struct {
	F        *Factory
	ThreadID string
	Ref      string
	Out      string
	JSON     bool
}

func newCmdArtifactGet(f *Factory) *cobra.Command {
	opts := &ArtifactGetOptions{F: f}
	cmd := &cobra.Command{
		Use:   "get <ref>",
		Short: "Show an artifact's metadata and preview, or save its content with --out",
		Long: `Without --out, print the artifact's metadata and its sanitized preview (never the
full content). With --out PATH, write the exact bytes to PATH; --out - writes them to stdout
(with control characters escaped when stdout is a terminal).

A ref names one artifact in the whole store, so no thread is needed: the ref relay prints
(6 hex characters) or a full ref works from anywhere. The thread (--thread, $RELAY_THREAD,
the project's) is searched first, and is needed for the older abbreviations (a hash prefix).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return artifactGetRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().StringVarP(&opts.Out, "out", "o", "", "write the content to this file (- for stdout)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the metadata as JSON")
	return cmd
}

func artifactGetRun(ctx context.Context, opts *ArtifactGetOptions) error {
	// The thread is optional: a ref relay prints names one artifact of the whole store.
	id, _, err := opts.F.memory().DefaultArg(opts.ThreadID)
	if err != nil {
		return WithHint(err, "relay thread use THREAD   (rewrites the project's thread)")
	}
	var c *client.Client
	if id != "" {
		c, id, err = threadClient(ctx, opts.F, id)
	} else {
		c, err = memoryClient(opts.F)
	}
	if err != nil {
		return err
	}
	a, err := c.Artifact(ctx, id, opts.Ref)
	if err != nil {
		if id == "" && !memory.ValidRef(opts.Ref) && !memory.IsShortRef(opts.Ref) && memory.IsRefPrefix(opts.Ref) {
			return WithHint(err, "an abbreviation other than the 6-character ref needs its thread: relay artifact get "+opts.Ref+" --thread THREAD")
		}
		return apiErr(err, id)
	}
	if id != "" && a.ThreadID != id {
		fmt.Fprintf(opts.F.IO.ErrOut, "note: artifact %s is in thread %s, not %s\n", a.Ref, a.ThreadID, id)
	}
	if opts.Out == "" {
		if opts.JSON {
			return writeJSON(opts.F.IO.Out, a)
		}
		w := opts.F.IO.Out
		fmt.Fprintf(w, "ref:         %s\n", a.Ref)
		fmt.Fprintf(w, "thread:      %s\n", a.ThreadID)
		fmt.Fprintf(w, "type:        %s (%s)\n", field(a.Type), field(a.Mime))
		fmt.Fprintf(w, "name:        %s\n", field(orDash(a.Name)))
		fmt.Fprintf(w, "size:        %d bytes, %d lines\n", a.Size, a.Preview.LineCount)
		fmt.Fprintf(w, "sha256:      %s\n", a.Hash)
		fmt.Fprintf(w, "created:     %s by %s\n", a.CreatedAt, field(orDash(a.Provenance.CreatedBy)))
		if a.Provenance.Capability != "" {
			fmt.Fprintf(w, "capability:  %s\n", field(a.Provenance.Capability))
		}
		fmt.Fprintf(w, "preview (truncated: %v):\n%s\n", a.Preview.Truncated, a.Preview.Text)
		return nil
	}
	body, err := c.ArtifactRaw(ctx, a.ThreadID, a.Ref)
	if err != nil {
		return apiErr(err, a.ThreadID)
	}
	defer body.Close()
	if opts.Out == "-" {
		_, err := io.Copy(opts.F.IO.Out, body)
		return err
	}
	return saveFile(opts.Out, body)
}

// saveFile writes r to path crash-safely, so a failed download leaves no half-written
// file and never clobbers the old one.
func saveFile(path string, r io.Reader) error {
	return atomicfile.Write(path, 0o600, atomicfile.Options{}, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
}

// ArtifactLsOptions are the inputs of `relay artifact ls`.
type ArtifactLsOptions struct {
	F        *Factory
	ThreadID string
	Type     string
	Limit    int
	JSON     bool
}

func newCmdArtifactLs(f *Factory) *cobra.Command {
	opts := &ArtifactLsOptions{F: f}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List a thread's artifacts, oldest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return artifactLsRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.ThreadID)
	cmd.Flags().StringVar(&opts.Type, "type", "", "only this type")
	cmd.Flags().IntVar(&opts.Limit, "limit", 1000, "how many (1-1000)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func artifactLsRun(ctx context.Context, opts *ArtifactLsOptions) error {
	id, err := threadArg(opts.F, opts.ThreadID)
	if err != nil {
		return err
	}
	if opts.Limit < 1 || opts.Limit > 1000 {
		return Usagef("--limit %d must be between 1 and 1000", opts.Limit)
	}
	c, id, err := threadClient(ctx, opts.F, id)
	if err != nil {
		return err
	}
	as, err := c.ListArtifacts(ctx, id, opts.Type, opts.Limit)
	if err != nil {
		return apiErr(err, id)
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, map[string]any{"artifacts": as})
	}
	if len(as) == 0 {
		fmt.Fprintf(opts.F.IO.ErrOut, "no artifacts in this thread; add one with: relay artifact put FILE --thread %s\n", id)
		return nil
	}
	tw := tabwriter.NewWriter(opts.F.IO.Out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tTYPE\tSIZE\tNAME\tCREATED")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", a.Ref, field(a.Type), a.Size, field(orDash(a.Name)), a.CreatedAt)
	}
	return tw.Flush()
}

// ArtifactGCOptions are the inputs of `relay artifact gc`.
type ArtifactGCOptions struct {
	F      *Factory
	DryRun bool
	Grace  time.Duration
	JSON   bool
}

func newCmdArtifactGC(f *Factory) *cobra.Command {
	opts := &ArtifactGCOptions{F: f}
	cmd := &cobra.Command{
		Use:   "gc [--dry-run] [--grace 24h]",
		Short: "Delete artifact bodies no artifact references from the store's bucket",
		Long: `Sweep the artifact bucket (relay up --artifacts s3://…): delete the bodies that no
artifact of the store references and that are older than the grace period. They are
left by puts whose artifact never committed (a crash, a refused write, a failed import).
The daemon also sweeps by itself every 6 hours (store.artifacts_gc in config.json or
RELAY_ARTIFACTS_GC sets the grace period, or off).

A put in flight on any daemon is never swept away: each put pins its body in the store
until its artifact commits. A bucket prefix that another relay store also uses is never
swept (that store's bodies would look unreferenced); --dry-run still reports it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Grace < 0 {
				return Usagef("--grace %s must not be negative", opts.Grace)
			}
			if !cmd.Flags().Changed("grace") {
				opts.Grace = -1
			}
			return artifactGCRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "only report what a sweep would delete")
	cmd.Flags().DurationVar(&opts.Grace, "grace", blobgc.DefaultGrace, "keep unreferenced bodies younger than this")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	return cmd
}

func artifactGCRun(ctx context.Context, opts *ArtifactGCOptions) error {
	c, err := memoryClient(opts.F)
	if err != nil {
		return err
	}
	rep, err := c.SweepBucket(ctx, opts.DryRun, opts.Grace)
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case "no_bucket":
			return WithHint(err, "relay up --artifacts s3://bucket/prefix?endpoint=… (docs/team.md)")
		case "shared_bucket":
			return WithHint(err, "relay artifact gc --dry-run (lists the other stores)")
		case "sweep_running":
			return WithHint(err, "relay artifact gc --dry-run")
		}
	}
	if err != nil {
		return apiErr(err, "")
	}
	if opts.JSON {
		return writeJSON(opts.F.IO.Out, rep)
	}
	w := opts.F.IO.Out
	fmt.Fprintf(w, "bucket:   %s\n", rep.Location)
	fmt.Fprintf(w, "bodies:   %d (%s)\n", rep.Objects, humanBytes(rep.Bytes))
	fmt.Fprintf(w, "orphans:  %d (%s), %d of them younger than %s (kept)\n", rep.Orphans, humanBytes(rep.OrphanBytes), rep.Young, rep.Grace)
	verb := "deleted: "
	if rep.DryRun {
		verb = "would delete:"
		rep.Deleted, rep.DeletedBytes = rep.Orphans-rep.Young, rep.OrphanBytes-rep.YoungBytes
	}
	fmt.Fprintf(w, "%s %d (%s)\n", verb, rep.Deleted, humanBytes(rep.DeletedBytes))
	if rep.Pinned > 0 {
		fmt.Fprintf(w, "pinned:   %d (a put in flight holds them; the next sweep looks again)\n", rep.Pinned)
	}
	for _, id := range rep.OtherStores {
		fmt.Fprintf(opts.F.IO.ErrOut, "Warning: another relay store (%s) keeps bodies in this location; sweeps delete nothing here\n", id)
	}
	return nil
}
