package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/atomicfile"
)

// projectThreadFile is where a project remembers its memory thread, relative to the project
// root: one thread UUID and a newline. It may have come with a clone, so it is read as hostile
// data: bounded, and nothing but a canonical UUID is accepted.
const projectThreadFile = ".relaycode/thread"

// maxProjectThreadFile bounds the read; a UUID and a newline are 37 bytes.
const maxProjectThreadFile = 256

// ReadProjectThread returns the thread id remembered by the project rooted at dir, or "" when
// the project has none.
func ReadProjectThread(dir string) (string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := r.Open(projectThreadFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
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
	return id, nil
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
