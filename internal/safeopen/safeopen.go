// Package safeopen opens files that may be hostile (a host's settings file a
// clone brought, .relaycode/thread): never blocks on a FIFO or a device, reads
// only regular files, can refuse symbolic links, and bounds what it reads.
package safeopen

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is a path that exists but is not a regular file (a FIFO, a
// device, a socket, a directory, or a link where links are refused).
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading. A symbolic link as the last component is
// refused unless followLinks. Opening never blocks: a FIFO swapped in after
// the check is opened non-blocking and refused by its mode.
func Open(path string, followLinks bool) (*os.File, error) {
	stat := os.Stat
	if !followLinks {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(fi.Mode()))}
	}
	flags := os.O_RDONLY | nonBlock
	if !followLinks {
		flags |= noFollow
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, nil
}

// ReadFile reads a regular file of at most limit bytes; a larger one is an
// error that names the limit. A missing file is fs.ErrNotExist.
func ReadFile(path string, followLinks bool, limit int64) ([]byte, error) {
	f, err := Open(path, followLinks)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads f up to limit bytes; more is an error.
func ReadAll(f io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes; relay does not read it", name, limit)
	}
	return b, nil
}

// Kind names a file type for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}
