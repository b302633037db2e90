// Package backend opens the memory store a URL names: the embedded SQLite store in
// $RELAY_HOME (the default) or PostgreSQL, either with artifact bodies optionally in an
// S3-compatible bucket. It is the one place that knows every backend.
package backend

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/blobgc"
	"github.com/relaydev/relay/internal/memory/postgres"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/relayhome"
)

// Config names a store.
type Config struct {
	// Home is $RELAY_HOME, where the SQLite store lives when URL does not say otherwise.
	Home string
	// URL is "", sqlite://, sqlite:///dir (a RELAY_HOME or its relay.db) or postgres://….
	URL string
	// Artifacts is "" (bodies in the store) or a blob location (s3://…, file:///dir).
	Artifacts string
	// Sync is the SQLite commit durability ("full" or "normal").
	Sync string
	// Mirror turns on the SQLite store's human-readable file mirror.
	Mirror bool
}

// Kind returns "sqlite" or "postgres" for a store URL, or an error naming the forms.
func Kind(u string) (string, error) {
	switch {
	case u == "" || strings.HasPrefix(u, "sqlite:"):
		return "sqlite", nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return "postgres", nil
	}
	return "", fmt.Errorf("store %s: use sqlite:// (the default, in $RELAY_HOME) or postgres://user@host/db", blob.Redact(u))
}

// SQLiteHome returns the directory of the SQLite store a sqlite:// URL names (home for
// sqlite:// or "").
func SQLiteHome(home, u string) (string, error) {
	if u == "" || u == "sqlite://" || u == "sqlite:" {
		return home, nil
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "sqlite" || (p.Host != "" && p.Host != "localhost") || p.Path == "" {
		return "", fmt.Errorf("store %s: a SQLite store is sqlite:///path/to/relay-home (or its relay.db)", blob.Redact(u))
	}
	dir := filepath.Clean(p.Path)
	if filepath.Base(dir) == relayhome.DBFile {
		dir = filepath.Dir(dir)
	}
	return dir, nil
}

// Open opens the store cfg names.
func Open(ctx context.Context, cfg Config) (memory.Store, error) {
	kind, err := Kind(cfg.URL)
	if err != nil {
		return nil, err
	}
	blobs, err := blob.Open(ctx, cfg.Artifacts)
	if err != nil {
		return nil, err
	}
	if p, ok := blobs.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return nil, err
		}
	}
	var st memory.Store
	switch kind {
	case "postgres":
		st, err = postgres.Open(ctx, cfg.URL, postgres.Options{Blobs: blobs})
	default:
		dir, derr := SQLiteHome(cfg.Home, cfg.URL)
		if derr != nil {
			return nil, derr
		}
		st, err = sqlite.OpenSQLite(dir, sqlite.Options{Sync: cfg.Sync, Mirror: cfg.Mirror, Blobs: blobs})
	}
	if err != nil {
		return nil, err
	}
	// The store marks the bucket location as its own, so a garbage collection run by any
	// store there can tell that it is shared (package blobgc) before deleting anything.
	c, bucket := blobs.(blob.Collectable)
	if ix, ok := st.(blobgc.Index); ok && bucket {
		id, err := ix.StoreID(ctx)
		if err == nil {
			_, err = c.Mark(ctx, id)
		}
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("mark %s as this store's: %w", blobs, err)
		}
	}
	return st, nil
}
