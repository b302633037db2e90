// Package atomicfile writes files crash-safely: a temp file in the same directory, fsync,
// rename, fsync of the directory. A reader or a crash sees the old content or the new,
// never a mix, and a failed write leaves the old file untouched. Every file relay writes
// whole goes through here.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Options tune Write.
type Options struct {
	// NoSync skips the fsyncs: the rename is still atomic for readers and for a crash of
	// the process, but not for a power loss. For files that are rebuilt when lost (the
	// memory store's human-readable mirror).
	NoSync bool
	// MkdirPerm, when not zero, creates the directory (and parents) with this mode first.
	MkdirPerm fs.FileMode
}

// WriteFile replaces path with data at mode perm.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, Options{}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with what fill writes, at mode perm (not subject to the umask).
func Write(path string, perm fs.FileMode, o Options, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if o.MkdirPerm != 0 {
		if err := os.MkdirAll(dir, o.MkdirPerm); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err = fill(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if !o.NoSync {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !o.NoSync {
		_ = SyncDir(dir) // the data is synced; a directory fsync some systems refuse
	}
	return nil
}

// SyncDir makes a rename or removal in dir durable. A file system that cannot fsync a
// directory (EINVAL) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return err
	}
	return nil
}
