package txn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
	real string // dir with symlinks resolved, to place absolute link targets
	root *os.Root
}

func openProject(dir string) (*project, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open project directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open project directory: %w", err)
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &project{dir: dir, real: abs, root: r}, nil
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

// pathErr turns os.Root's escape errors into a clear refusal. os.Root reports an escape
// only through its text (the error value is unexported), so the text is what is matched.
func (p *project) pathErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes") {
		return &PathError{name, "a symbolic link in it leads outside the project"}
	}
	return err
}

// maxLinks bounds symlink resolution, like the kernel's ELOOP limit.
const maxLinks = 40

// resolve follows every symlink in name (a clean project path) inside the
// project and returns the real project path it names ("" for the root).
// A link to an absolute path inside the project is followed; one leading
// outside the project is refused.
func (p *project) resolve(name string) (string, error) {
	todo := strings.Split(name, "/")
	var done []string
	links := 0
	missing := false
	for len(todo) > 0 {
		el := todo[0]
		todo = todo[1:]
		switch el {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &PathError{name, "a symbolic link in it leads outside the project"}
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(slices.Clone(done), el)...)
		if missing {
			done = append(done, el)
			continue
		}
		fi, err := p.root.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				missing = true // nothing below a missing path can be a link yet
				done = append(done, el)
				continue
			}
			return "", p.pathErr(name, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, el)
			continue
		}
		if links++; links > maxLinks {
			return "", &PathError{name, "too many levels of symbolic links"}
		}
		target, err := p.root.Readlink(cur)
		if err != nil {
			return "", p.pathErr(name, err)
		}
		if filepath.IsAbs(target) {
			rel, err := filepath.Rel(p.real, filepath.Clean(target))
			if err != nil || !filepath.IsLocal(rel) && rel != "." {
				return "", &PathError{name, fmt.Sprintf("the symbolic link %s leads outside the project (to %s)", cur, target)}
			}
			done, target = nil, filepath.ToSlash(rel)
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return path.Join(done...), nil
}

// check resolves name and refuses it when its real target is the project
// root, inside .git/ or .relaycode/, or outside the project: the lexical
// check of an answer path cannot see a checked-in link like g -> .git.
func (p *project) check(name string) (string, error) {
	real, err := p.resolve(name)
	if err != nil {
		return "", err
	}
	if real == name {
		return real, nil
	}
	if real == "" {
		return "", &PathError{name, "a symbolic link in it leads to the project root itself"}
	}
	if _, err := CleanPath(real); err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			return "", &PathError{name, fmt.Sprintf("a symbolic link in it leads to %s: %s", real, pe.Reason)}
		}
		return "", err
	}
	return real, nil
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

// write puts f at name, creating parent directories. A file with more than
// one hard link is replaced by a new file (rename) rather than rewritten: the
// other link may be a file outside the project.
func (p *project) write(name string, f vfile) error {
	if _, err := p.check(name); err != nil {
		return err
	}
	if dir := path.Dir(name); dir != "." {
		if err := p.root.MkdirAll(dir, 0o755); err != nil {
			return p.pathErr(name, fmt.Errorf("create directory %s: %w", dir, err))
		}
	}
	if fi, err := p.root.Lstat(name); err == nil && fi.Mode().IsRegular() && linkCount(fi) > 1 {
		if !f.modeSet {
			f.mode, f.modeSet = fi.Mode().Perm(), true
		}
		return p.replace(name, f)
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

// replace writes f to a new file beside name and renames it over name.
func (p *project) replace(name string, f vfile) error {
	var tmp string
	var fh *os.File
	for i := 0; ; i++ {
		tmp = path.Join(path.Dir(name), fmt.Sprintf(".%s.relay-tmp-%d-%d", path.Base(name), os.Getpid(), i))
		var err error
		fh, err = p.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return p.pathErr(name, err)
		}
	}
	_, err := fh.WriteString(f.content)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = p.root.Chmod(tmp, f.mode)
	}
	if err == nil {
		err = p.root.Rename(tmp, name)
	}
	if err != nil {
		_ = p.root.Remove(tmp)
		return p.pathErr(name, err)
	}
	return nil
}

func (p *project) remove(name string) error {
	if _, err := p.check(name); err != nil {
		return err
	}
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
		if real, err := p.check(d); err != nil || real != d {
			continue // through a link: not a directory the transaction created
		}
		if fi, err := p.root.Lstat(d); err == nil && fi.IsDir() {
			_ = p.root.Remove(d) // fails when not empty: then it holds someone's files, keep it
		}
	}
}
