package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migration is one step of the schema; versions are applied in order, each in its own
// transaction, and recorded in schema_migrations.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the whole schema history. Append only: a daemon refuses a database whose
// schema is newer than the last entry here.
var migrations = []migration{
	{1, "core", `
CREATE TABLE threads (
  id             TEXT PRIMARY KEY,
  name           TEXT NOT NULL DEFAULT '',
  created_at     TIMESTAMPTZ NOT NULL,
  updated_at     TIMESTAMPTZ NOT NULL,
  version        INTEGER NOT NULL,
  snap_version   INTEGER NOT NULL DEFAULT 1,
  artifact_count INTEGER NOT NULL DEFAULT 0,
  event_count    INTEGER NOT NULL DEFAULT 0,
  last_event_id  BIGINT NOT NULL DEFAULT 0,
  cache_hits     BIGINT NOT NULL DEFAULT 0,
  tokens_avoided BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX threads_updated ON threads (updated_at DESC, id);

-- One row per version: the patch that made it (version 1 has "[]"), byte for byte.
CREATE TABLE state_versions (
  thread_id  TEXT NOT NULL REFERENCES threads (id),
  version    INTEGER NOT NULL,
  patch      BYTEA NOT NULL,
  author     TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL,
  event_id   BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (thread_id, version)
);

-- Periodic full documents; any version = nearest snapshot at or below it + later patches.
CREATE TABLE state_snapshots (
  thread_id TEXT NOT NULL REFERENCES threads (id),
  version   INTEGER NOT NULL,
  doc       BYTEA NOT NULL,
  PRIMARY KEY (thread_id, version)
);

CREATE TABLE artifacts (
  ref               TEXT PRIMARY KEY,
  thread_id         TEXT NOT NULL REFERENCES threads (id),
  type              TEXT NOT NULL,
  mime              TEXT NOT NULL,
  name              TEXT NOT NULL DEFAULT '',
  size              BIGINT NOT NULL,
  hash              TEXT NOT NULL,
  preview_text      TEXT NOT NULL,
  preview_lines     INTEGER NOT NULL,
  preview_truncated BOOLEAN NOT NULL,
  created_by        TEXT NOT NULL DEFAULT '',
  capability        TEXT NOT NULL DEFAULT '',
  source_refs       TEXT NOT NULL DEFAULT '[]',
  created_at        TIMESTAMPTZ NOT NULL,
  UNIQUE (thread_id, hash)
);
CREATE INDEX artifacts_thread ON artifacts (thread_id, ref);

-- Bodies kept in the database (no bucket configured), by sha256: one copy per content.
CREATE TABLE blobs (
  hash    TEXT PRIMARY KEY,
  content BYTEA NOT NULL
);

CREATE TABLE events (
  id        BIGSERIAL PRIMARY KEY,
  thread_id TEXT NOT NULL REFERENCES threads (id),
  type      TEXT NOT NULL,
  at        TIMESTAMPTZ NOT NULL,
  data      BYTEA NOT NULL
);
CREATE INDEX events_thread ON events (thread_id, id);
`},
	{2, "search", `
-- English stemming like SQLite's porter tokenizer, without a stop-word list: every word a
-- user can type is searchable.
CREATE TEXT SEARCH DICTIONARY relay_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION relay_search (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION relay_search
  ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH relay_stem;

-- seq is the artifact's position in its thread: the newest matches are ranked first when a
-- word is everywhere, and max(seq) tells a cached search that the thread has new artifacts.
CREATE TABLE artifact_search (
  ref       TEXT PRIMARY KEY REFERENCES artifacts (ref),
  thread_id TEXT NOT NULL,
  seq       BIGINT NOT NULL,
  type      TEXT NOT NULL,
  name      TEXT NOT NULL,
  body      TEXT NOT NULL,
  doc       TSVECTOR NOT NULL,
  UNIQUE (thread_id, seq)
);
CREATE INDEX artifact_search_doc ON artifact_search USING GIN (doc);
`},
	{3, "capabilities and agent-to-agent", `
CREATE TABLE cap_cache (
  key          TEXT PRIMARY KEY,
  capability   TEXT NOT NULL,
  thread_id    TEXT NOT NULL,
  artifact_ref TEXT NOT NULL,
  preview      BYTEA NOT NULL,
  expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX cap_cache_expires ON cap_cache (expires_at);
CREATE TABLE cap_calls (
  id            BIGSERIAL PRIMARY KEY,
  thread_id     TEXT NOT NULL,
  capability    TEXT NOT NULL,
  args          BYTEA NOT NULL,
  artifact_ref  TEXT NOT NULL,
  cache_hit     BOOLEAN NOT NULL,
  preview_bytes INTEGER NOT NULL,
  duration_ms   BIGINT NOT NULL,
  at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX cap_calls_thread ON cap_calls (thread_id, id);
CREATE TABLE a2a_hops (
  thread_id TEXT PRIMARY KEY,
  hops      INTEGER NOT NULL
);
CREATE TABLE a2a_messages (
  thread_id       TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  msg_id          TEXT NOT NULL,
  status          TEXT NOT NULL, -- pending | done
  response        BYTEA,
  received_at     TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (thread_id, idempotency_key)
);
`},
	{4, "bucket garbage collection", `
-- The store's id: daemons of one store mark the bucket prefix with it, so a sweep can tell
-- its own bodies' location from one another store shares.
CREATE TABLE store_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('store_id', gen_random_uuid()::text);

-- Bodies being put to the bucket: a sweep deletes no body pinned here (gc.go). A pin is
-- dropped in the transaction that commits its artifact, or after the put fails; one left by
-- a crashed daemon stops counting after a day.
CREATE TABLE blob_pins (
  id        BIGSERIAL PRIMARY KEY,
  hash      TEXT NOT NULL,
  pinned_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX blob_pins_hash ON blob_pins (hash);

-- The sweep asks which listed bodies any artifact references.
CREATE INDEX artifacts_hash ON artifacts (hash);
`},
	{5, "artifact short refs", `
-- An artifact's short ref (its ref's last 6 digits) is the one ref relay shows: looked up
-- without the thread, and checked free when a put draws a ref. Matches shortExpr.
CREATE INDEX artifacts_short ON artifacts (substr(ref, 21));
`},
}

// SchemaVersion is the schema this build writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrateLockKey is the advisory lock held while migrating, so daemons starting at once
// apply each step exactly once ("relay.mig" in ASCII).
const migrateLockKey int64 = 0x72656c61792e6d69

// migrate applies the pending migrations under the advisory lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must go even when ctx was cancelled mid-migration.
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, migrateLockKey); err != nil {
			conn.Conn().Close(uctx) // closing the session releases the lock
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	cur, err := currentVersion(ctx, conn.Conn())
	if err != nil {
		return err
	}
	if cur > SchemaVersion() {
		return fmt.Errorf("the database schema is at version %d, newer than this relay knows (%d); upgrade relay on this machine", cur, SchemaVersion())
	}
	for _, m := range migrations {
		if m.version <= cur {
			continue
		}
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply schema migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func currentVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// errSchemaMissing says the database has no relay schema yet.
var errSchemaMissing = errors.New("the database has no relay schema; start `relay up --store …` once to create it")
