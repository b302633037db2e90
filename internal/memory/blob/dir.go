package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/uuid"
)

// Dir keeps bodies as files under a directory (a local disk or a shared mount).
type Dir struct{ root string }

// NewDir opens (creating) a directory store.
func NewDir(root string) (*Dir, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("artifacts directory %q must be an absolute path", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create artifacts directory: %w", err)
	}
	return &Dir{root: filepath.Clean(root)}, nil
}

func (d *Dir) path(sum string) string {
	return filepath.Join(d.root, filepath.FromSlash(objectName(sum)))
}

func (d *Dir) String() string { return "file://" + d.root }

// Put implements Store: write to a temporary file, fsync, rename into place, so a reader
// never sees a partial body and a crash leaves only a stray temporary file.
func (d *Dir) Put(ctx context.Context, sum string, size int64, r io.Reader) (bool, error) {
	if !ValidSum(sum) {
		return false, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	p := d.path(sum)
	if _, err := os.Stat(p); err == nil {
		return true, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return false, fmt.Errorf("store artifact body: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(p), ".tmp-"+uuid.NewString())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("store artifact body: %w", err)
	}
	n, err := io.Copy(f, Verify(io.NopCloser(io.LimitReader(r, size+1)), sum, "the uploaded body"))
	if err == nil && n != size {
		err = fmt.Errorf("body is %d bytes, expected %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("store artifact body: %w", err)
	}
	return false, nil
}

// Open implements Store.
func (d *Dir) Open(ctx context.Context, sum string) (io.ReadCloser, error) {
	if !ValidSum(sum) {
		return nil, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	f, err := os.Open(d.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("artifact body %s in %s: %w", sum[:12], d, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return Verify(f, sum, "artifact body "+sum[:12]), nil
}

// Stat implements Store.
func (d *Dir) Stat(ctx context.Context, sum string) (int64, error) {
	if !ValidSum(sum) {
		return 0, fmt.Errorf("blob name %q is not a sha256", sum)
	}
	fi, err := os.Stat(d.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("artifact body %s in %s: %w", sum[:12], d, ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Delete implements Store.
func (d *Dir) Delete(ctx context.Context, sum string) error {
	if !ValidSum(sum) {
		return fmt.Errorf("blob name %q is not a sha256", sum)
	}
	err := os.Remove(d.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// List implements Collectable.
func (d *Dir) List(ctx context.Context, fn func(Object) error) error {
	root := filepath.Join(d.root, "sha256")
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipDir // nothing stored yet
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.Type().IsRegular() || !ValidSum(e.Name()) || filepath.Base(filepath.Dir(p)) != e.Name()[:2] {
			return nil // a directory, a temporary file of a put in flight, or something else
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		return fn(Object{Sum: e.Name(), Size: fi.Size(), Modified: fi.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", d, err)
	}
	return nil
}

// DeleteMany implements Collectable.
func (d *Dir) DeleteMany(ctx context.Context, sums []string) error {
	for _, sum := range sums {
		if err := d.Delete(ctx, sum); err != nil {
			return err
		}
	}
	return nil
}

// Mark implements Collectable.
func (d *Dir) Mark(ctx context.Context, id string) ([]string, error) {
	if !ValidStoreID(id) {
		return nil, fmt.Errorf("store id %q cannot name a marker", id)
	}
	dir := filepath.Join(d.root, "stores")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mark %s: %w", d, err)
	}
	if err := os.WriteFile(filepath.Join(dir, id), nil, 0o600); err != nil {
		return nil, fmt.Errorf("mark %s: %w", d, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("mark %s: %w", d, err)
	}
	var ids []string
	for _, e := range ents {
		if ValidStoreID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
