package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/safeopen"
)

// projectThreadFile is where a project remembers its memory thread, relative to the project
// root: one thread UUID and a newline. It may have come with a clone, so it is read as hostile
// data: bounded, and nothing but a canonical UUID is accepted.
const projectThreadFile = ".relaycode/thread"

// maxProjectThreadFile bounds the read; a UUID and a newline are 37 bytes.
const maxProjectThreadFile = 256

// ReadProjectThread returns the thread id remembered by the project rooted at dir, or "" when
// the project has none. A thread file git tracks came with the repository: it is a
// *TrackedThreadError (callers warn and go on without it). A FIFO or any other file that is
// not a regular file is refused without being opened for a blocking read.
func ReadProjectThread(dir string) (string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer r.Close()
	fi, err := r.Lstat(projectThreadFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", projectThreadFile, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (it is %s)", projectThreadFile, safeopen.Kind(fi.Mode()))
	}
	f, err := r.OpenFile(projectThreadFile, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", projectThreadFile, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", projectThreadFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxProjectThreadFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", projectThreadFile, err)
	}
	id := strings.TrimSpace(string(b))
	if len(b) > maxProjectThreadFile || !validThreadID(id) {
		return "", fmt.Errorf("%s does not hold a thread id (a UUID)", projectThreadFile)
	}
	if gitTracks(dir, projectThreadFile) {
		return "", &TrackedThreadError{}
	}
	return id, nil
}

// TrackedThreadError is a .relaycode/thread that git tracks: it came with the repository and
// may name a thread on a shared store that others read, so relay does not record into it.
type TrackedThreadError struct{}

func (*TrackedThreadError) Error() string {
	return projectThreadFile + " is tracked by git, so it came with the repository (it may name a thread others read); relay ignores it"
}

// trackedThreadHint is the way out of a TrackedThreadError.
const trackedThreadHint = "git rm --cached " + projectThreadFile + ", then relay thread use THREAD   (a thread of your own)"

// gitTracks reports whether git tracks rel in the work tree at dir.
func gitTracks(dir, rel string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return run.Git(ctx, dir, "ls-files", "--error-unmatch", "--", rel).Run() == nil
}

// WriteProjectThread makes id the thread of the project rooted at dir ("" forgets it).
func WriteProjectThread(dir, id string) error {
	if id == "" {
		err := os.Remove(filepath.Join(dir, projectThreadFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !validThreadID(id) {
		return fmt.Errorf("thread id %q is not a UUID", id)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.MkdirAll(".relaycode", 0o755); err != nil {
		return fmt.Errorf("create .relaycode: %w", err)
	}
	if fi, err := r.Lstat(".relaycode"); err != nil || !fi.IsDir() {
		return errors.New(".relaycode is not a directory")
	}
	return atomicfile.WriteFile(filepath.Join(dir, projectThreadFile), []byte(id+"\n"), 0o644)
}

func validThreadID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && len(id) == 36 && u.String() == id
}

// memoryThread picks the thread a project command writes to: the flag, else $RELAY_THREAD,
// else the thread remembered by the project governing the working directory. "" means none
// is set; the error is only for a project thread file that cannot be trusted.
func memoryThread(f *Factory, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if t := f.Getenv("RELAY_THREAD"); t != "" {
		return t, nil
	}
	dir, err := f.WorkDir()
	if err != nil {
		return "", nil
	}
	file, err := config.Find(dir)
	if err != nil {
		return "", nil // not in a project
	}
	id, err := ReadProjectThread(filepath.Dir(file))
	var tracked *TrackedThreadError
	if errors.As(err, &tracked) {
		fmt.Fprintf(f.IO.ErrOut, "Warning: %v.\nTry: %s\n", err, trackedThreadHint)
		return "", nil
	}
	return id, err
}

// projectRoot returns the root of the project governing the working directory.
func projectRoot(f *Factory) (string, error) {
	dir, err := f.WorkDir()
	if err != nil {
		return "", err
	}
	file, err := config.Find(dir)
	if err != nil {
		return "", WithHint(errors.New("not in a relay project (no relaycode.config.json here or above)"), "relay init")
	}
	return filepath.Dir(file), nil
}

func newCmdThreadUse(f *Factory) *cobra.Command {
	var clear, makeNew bool
	cmd := &cobra.Command{
		Use:   "use [thread]",
		Short: "Make a thread this project's memory (apply and ask then record into it)",
		Long: `Remember a thread for the project in .relaycode/thread. relay apply, watch, revert,
git commit and ask then record into it when neither --thread nor RELAY_THREAD is given.
Without an argument, print the project's thread; --clear forgets it; --new makes a
thread named after the project directory (the next free "name (2)" when another thread
has that name, as relay mcp does) and uses it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := projectRoot(f)
			if err != nil {
				return err
			}
			if makeNew && (clear || len(args) > 0) {
				return WithHint(Usagef("--new makes the thread: give no thread and no --clear"), "relay thread use --new")
			}
			switch {
			case clear:
				return WriteProjectThread(root, "")
			case makeNew:
				c, err := memoryClient(f)
				if err != nil {
					return err
				}
				t, err := c.CreateThreadIf(cmd.Context(), filepath.Base(root), memory.NameTakenNext)
				if err != nil {
					return apiErr(err, "")
				}
				if err := WriteProjectThread(root, t.ID); err != nil {
					return err
				}
				fmt.Fprintf(f.IO.ErrOut, "This project now records into the new thread %s (%s).\n", t.ID, field(t.Name))
				return printKV(f, "thread_id", t.ID)
			case len(args) == 0:
				id, err := ReadProjectThread(root)
				var tracked *TrackedThreadError
				if errors.As(err, &tracked) {
					return WithHint(err, trackedThreadHint)
				}
				if err != nil {
					return WithHint(err, "relay thread use THREAD   (to replace it)")
				}
				if id == "" {
					return WithHint(errors.New("this project has no thread yet"), "relay thread use --new")
				}
				_, err = fmt.Fprintln(f.IO.Out, id)
				return err
			}
			_, id, err := threadClient(cmd.Context(), f, args[0])
			if err != nil {
				return err
			}
			if err := WriteProjectThread(root, id); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "This project now records into thread %s.\n", id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "forget the project's thread")
	cmd.Flags().BoolVar(&makeNew, "new", false, "make a thread named after the project and use it")
	return cmd
}
