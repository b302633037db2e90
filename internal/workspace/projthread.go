package workspace

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

	"github.com/relaydev/relay/internal/atomicfile"
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

// TrackedThreadHint is the way out of a TrackedThreadError.
const TrackedThreadHint = "git rm --cached " + projectThreadFile + ", then relay thread use THREAD   (a thread of your own)"

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
