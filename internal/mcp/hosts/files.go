package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/safeopen"
)

// How relay reads and writes a host's files. A project's files may have come
// with a clone: a link there (.mcp.json -> ~/.claude/.credentials.json, or a
// linked .gemini/) would make relay read a secret into the project or write
// outside it, so project scope refuses a link anywhere below the project.
// A user's own files may be links (dotfile managers): relay writes through
// them at their target and never replaces the link. A host may rewrite its
// file while relay edits it: relay takes the lock the host takes, compares
// the file with what it read right before it renames, and the caller starts
// again when it changed.

// maxConfig bounds how much of a host's config file is read.
const maxConfig = 32 << 20

// ErrChanged means the file changed after relay read it; read it again and
// redo the edit.
var ErrChanged = errors.New("changed while relay was editing it")

// scopeRoot is the directory below which no link is followed: the project
// for project scope, none for user scope.
func scopeRoot(scope Scope, env Env) string {
	if scope == Project {
		return env.ProjectDir
	}
	return ""
}

// Lock takes the lock the host itself takes before it rewrites its settings,
// so relay reads, edits and writes them while the host waits: Claude Code
// locks ~/.claude.json with a ~/.claude.json.lock directory. Hosts with no
// lock relay knows of get a no-op (WriteChange still compares before it
// renames).
func Lock(host string, scope Scope, env Env) (unlock func(), err error) {
	if host != "claude" || scope != User {
		return func() {}, nil
	}
	path, err := ConfigPath(host, scope, env)
	if err != nil {
		return nil, err
	}
	return lockDir(path + ".lock")
}

// checkNoLinks refuses path when any component below root is a symbolic
// link (or something that is not a directory on the way).
func checkNoLinks(root, path string) error {
	if root == "" {
		return nil
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not inside the project %s", path, root)
	}
	cur := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; in a project (which may be a clone) relay neither reads nor writes through links: remove it, or use --scope user", cur)
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return fmt.Errorf("%s is %s, not a directory", cur, safeopen.Kind(fi.Mode()))
		}
	}
	return nil
}

// readFile reads a host's file: nil when it does not exist, an error when it
// is not a regular file (a FIFO must not hang relay) or is too large.
func readFile(path, root string) ([]byte, error) {
	if err := checkNoLinks(root, path); err != nil {
		return nil, err
	}
	b, err := safeopen.ReadFile(path, root == "", maxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, safeopen.ErrNotRegular) {
		return nil, fmt.Errorf("%s is not a regular file; relay edits only plain files", path)
	}
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// WriteChange writes one change: atomically, keeping the file's permission
// bits, and only when the file still holds c.Old (else ErrChanged). A
// user-scope link is written through at its target.
func WriteChange(c Change) error {
	if err := checkNoLinks(c.Root, c.Path); err != nil {
		return err
	}
	target := c.Path
	if fi, err := os.Lstat(c.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if c.New == nil {
			return fmt.Errorf("%s is a symbolic link; relay does not remove it (remove relay's entry from its target by hand)", c.Path)
		}
		real, err := filepath.EvalSymlinks(c.Path)
		if err != nil {
			return fmt.Errorf("%s is a symbolic link relay cannot follow: %w", c.Path, err)
		}
		target = real
	}
	if c.New == nil {
		if err := same(c.Path, c.Root, c.Old); err != nil {
			return err
		}
		return os.Remove(c.Path)
	}
	mode := fs.FileMode(0o644)
	if strings.HasSuffix(c.Path, ".claude.json") {
		mode = 0o600 // Claude Code keeps account state there
	}
	if st, err := os.Stat(target); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := checkNoLinks(c.Root, c.Path); err != nil { // MkdirAll followed nothing new
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".relay-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(c.New); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// compare as late as possible: the new file is ready, only the rename is left
	if err := same(c.Path, c.Root, c.Old); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// same returns ErrChanged unless path holds old (nil: does not exist).
func same(path, root string, old []byte) error {
	cur, err := readFile(path, root)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, old) || (cur == nil) != (old == nil) {
		return fmt.Errorf("%s %w", path, ErrChanged)
	}
	return nil
}

// lockStale is when a lock directory is taken over: Claude Code's lock
// library refreshes its lock's time well within it and treats an older one
// as left by a crashed process.
const lockStale = 10 * time.Second

// lockDir takes a mkdir lock (the protocol of Claude Code's lock library):
// it waits while another process holds it, and takes over a stale one.
func lockDir(path string) (func(), error) {
	deadline := time.Now().Add(lockStale + 5*time.Second)
	wait := time.Millisecond
	for {
		err := os.Mkdir(path, 0o700)
		if err == nil {
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if fi, err := os.Lstat(path); err == nil && time.Since(fi.ModTime()) > lockStale {
			os.Remove(path) // left by a process that died holding it
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s is held by another process (the host is writing its settings); try again", path)
		}
		time.Sleep(wait)                       // polling: a mkdir lock has no way to wait on it
		wait = min(wait*2, 5*time.Millisecond) // often: a host frees its lock only briefly between writes
	}
}
