package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/iostreams"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/workspace"
)

// ExportOptions are the inputs of `relay export`.
type ExportOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
	Thread string
	Out    string
	Force  bool
}

func newCmdExport(f *Factory) *cobra.Command {
	opts := &ExportOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	cmd := &cobra.Command{
		Use:   "export [<thread>] --out bundle.zip",
		Short: "Export a thread (state history, artifacts, events) as a zip bundle",
		Long: `Export a thread (state history, artifacts, events) as a zip bundle that relay import reads.
The thread is the argument, else --thread, $RELAY_THREAD, then the project's thread.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := threadOrArg(f, args, opts.Thread)
			if err != nil {
				return err
			}
			opts.Thread = id
			return exportRun(cmd.Context(), opts)
		},
	}
	threadFlag(cmd, f, &opts.Thread)
	cmd.Flags().StringVarP(&opts.Out, "out", "o", "", "zip file to write (default relay-<thread>.zip)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing file")
	return cmd
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	tid, err := workspace.ResolveThread(ctx, c, opts.Thread)
	if err != nil {
		return err
	}
	out := opts.Out
	if out == "" {
		out = "relay-" + tid + ".zip"
	}
	if _, err := os.Stat(out); err == nil && !opts.Force {
		return WithHint(fmt.Errorf("%s already exists", out), "relay export "+tid+" --out "+out+" --force")
	}
	zr, length, err := c.Export(ctx, tid)
	if err != nil {
		return apiErr(err, tid)
	}
	defer zr.Close()
	// Written whole or not at all, so a failed export never leaves a half zip.
	var n int64
	err = atomicfile.Write(out, 0o600, atomicfile.Options{}, func(w io.Writer) error {
		var err error
		n, err = io.Copy(w, zr)
		if err == nil && length >= 0 && n != length {
			err = fmt.Errorf("got %d of %d bytes", n, length)
		}
		return err
	})
	if err != nil {
		return WithHint(fmt.Errorf("export interrupted: %w; nothing was written to %s", err, out), "relay export "+tid+" --out "+out)
	}
	fmt.Fprintf(opts.IO.ErrOut, "exported thread %s (%d bytes)\n", tid, n)
	_, err = fmt.Fprintln(opts.IO.Out, out)
	return err
}

// ImportOptions are the inputs of `relay import`.
type ImportOptions struct {
	IO     *iostreams.IOStreams
	Client func() (*client.Client, error)
	File   string
	AsNew  bool
	Name   string
	JSON   bool
}

func newCmdImport(f *Factory) *cobra.Command {
	opts := &ImportOptions{IO: f.IO, Client: func() (*client.Client, error) { return memoryClient(f) }}
	cmd := &cobra.Command{
		Use:   "import <bundle.zip> [--as-new [--name NAME]]",
		Short: "Import a thread bundle made by relay export",
		Long: `Import a bundle made by relay export. The thread keeps its id, refs, hashes, versions
and events. A thread that already exists is refused unless --as-new, which imports a copy under
a new thread id with new artifact refs, named --name or, by default, the thread's name made
unique ("demo (2)", the next free number) so the name still finds one thread. Unsafe bundles (paths with .., absolute paths, links,
oversized entries, hashes that do not match) are refused and nothing is written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return importRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AsNew, "as-new", false, "import as a new thread with new ids")
	cmd.Flags().StringVar(&opts.Name, "name", "", "with --as-new: the copy's name (default: the thread's name with the next free \"(n)\")")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the import result as JSON")
	return cmd
}

func importRun(ctx context.Context, opts *ImportOptions) error {
	fh, err := os.Open(opts.File)
	if err != nil {
		return fmt.Errorf("open bundle: %w", err)
	}
	defer fh.Close()
	c, err := opts.Client()
	if err != nil {
		return err
	}
	if opts.Name != "" && !opts.AsNew {
		return WithHint(Usagef("--name names a copy; it needs --as-new"), "relay import "+opts.File+" --as-new --name "+strconv.Quote(opts.Name))
	}
	res, err := c.Import(ctx, fh, opts.AsNew, opts.Name)
	if err != nil {
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Code == "thread_exists" {
			return WithHint(err, "relay import "+opts.File+" --as-new")
		}
		return apiErr(err, "")
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, res)
	}
	fmt.Fprintf(opts.IO.ErrOut, "imported %d versions, %d artifacts, %d events", res.Versions, res.Artifacts, res.Events)
	if res.Name != "" {
		fmt.Fprintf(opts.IO.ErrOut, " as thread %q", res.Name)
	}
	fmt.Fprintln(opts.IO.ErrOut)
	return printKV(&Factory{IO: opts.IO}, "thread_id", res.ThreadID)
}
