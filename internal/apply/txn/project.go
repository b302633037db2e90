package txn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// vfile is one path's state: on disk, in a snapshot, or planned.
type vfile struct {
	content string
	exists  bool
	mode    fs.FileMode
	// modeSet: the mode must be applied with chmod (renamed or restored
	// files); new files otherwise get 0644 filtered by the user's umask.
	modeSet bool
}

// project is the project directory opened as an os.Root, so no path from a
// response can reach outside it, through ".." or a symlink.
type project struct {
	dir  string
	root *os.Root
}

func openProject(dir string) (*project, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open project directory: %w", err)
	}
	return &project{dir: dir, root: r}, nil
}

func (p *project) close() { _ = p.root.Close() }

// read returns the current state of a clean path. Symlinks and directories
// are refused: relay edits regular files only.
func (p *project) read(name string) (vfile, error) {
	fi, err := p.root.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return vfile{}, nil
		}
		return vfile{}, p.pathErr(name, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return vfile{}, &PathError{name, "it is a symbolic link; relay only edits regular files (edit the file it points to instead)"}
	case fi.IsDir():
		return vfile{}, &PathError{name, "it is a directory, not a file"}
	case !fi.Mode().IsRegular():
		return vfile{}, &PathError{name, "it is not a regular file"}
	}
	b, err := p.root.ReadFile(name)
	if err != nil {
		return vfile{}, p.pathErr(name, err)
	}
	return vfile{content: string(b), exists: true, mode: fi.Mode().Perm()}, nil
}

// pathErr turns os.Root's escape errors into a clear refusal.
func (p *project) pathErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes") {
		return &PathError{name, "a symbolic link in it leads outside the project"}
	}
	return err
}

// missingDirs lists the ancestors of name that are not directories now,
// outermost first.
func (p *project) missingDirs(name string) []string {
	var out []string
	for _, d := range parentDirs(name) {
		fi, err := p.root.Stat(d)
		if err != nil || !fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// write puts f at name, creating parent directories.
func (p *project) write(name string, f vfile) error {
	if dir := path.Dir(name); dir != "." {
		if err := p.root.MkdirAll(dir, 0o755); err != nil {
			return p.pathErr(name, fmt.Errorf("create directory %s: %w", dir, err))
		}
	}
	fh, err := p.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return p.pathErr(name, err)
	}
	if _, err := fh.WriteString(f.content); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if f.modeSet {
		if err := p.root.Chmod(name, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func (p *project) remove(name string) error {
	err := p.root.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return p.pathErr(name, err)
}

// sync flushes a written file to disk.
func (p *project) sync(name string) error {
	fh, err := p.root.Open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	return fh.Sync()
}

// restore puts the project back to a snapshot: files that were absent are
// deleted, directories the transaction created are removed when empty, and
// every other file gets its old bytes and mode back. It returns the restored
// paths and an error naming each path it could not restore.
func (p *project) restore(s *State) (restored []string, err error) {
	var failed []string
	var errs []error
	paths := make([]string, 0, len(s.Snapshot))
	for name := range s.Snapshot {
		paths = append(paths, name)
	}
	slices.Sort(paths)
	for _, name := range paths {
		if s.Snapshot[name] != nil {
			continue
		}
		cur, rerr := p.read(name)
		if rerr == nil && !cur.exists {
			continue
		}
		if err := p.remove(name); err != nil {
			failed, errs = append(failed, name), append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		restored = append(restored, name)
	}
	p.pruneDirs(s.CreatedDirs)
	for _, name := range paths {
		old := s.Snapshot[name]
		if old == nil {
			continue
		}
		want := vfile{content: *old, exists: true, mode: s.mode(name), modeSet: true}
		if cur, err := p.read(name); err == nil && cur.exists && cur.content == want.content && cur.mode == want.mode {
			continue
		}
		if err := p.write(name, want); err != nil {
			failed, errs = append(failed, name), append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		restored = append(restored, name)
	}
	if len(failed) > 0 {
		return restored, &RollbackError{Paths: failed, Err: errors.Join(errs...)}
	}
	slices.Sort(restored)
	return restored, nil
}

// RollbackError lists files a rollback could not restore. The pending file
// is kept, so the next relay command in the project tries again.
type RollbackError struct {
	Paths []string
	Err   error
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("rollback could not restore %d file(s): %v; the pending record in %s/ was kept, fix the cause and run any relay command in the project to retry", len(e.Paths), e.Err, StateDir)
}

func (e *RollbackError) Unwrap() error { return e.Err }

// pruneDirs removes the given directories that are empty, deepest first.
func (p *project) pruneDirs(dirs []string) {
	dirs = slices.Clone(dirs)
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		if _, err := CleanPath(d); err != nil {
			continue
		}
		if fi, err := p.root.Lstat(d); err == nil && fi.IsDir() {
			_ = p.root.Remove(d) // fails when not empty: then it holds someone's files, keep it
		}
	}
}
