package sqlite

// coreSchema is the DDL of threads, state, artifacts and events.
const coreSchema = `
CREATE TABLE threads (
  id             TEXT PRIMARY KEY,
  name           TEXT NOT NULL DEFAULT '',
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  version        INTEGER NOT NULL,
  artifact_count INTEGER NOT NULL DEFAULT 0,
  event_count    INTEGER NOT NULL DEFAULT 0,
  last_event_id  INTEGER NOT NULL DEFAULT 0,
  cache_hits     INTEGER NOT NULL DEFAULT 0,
  tokens_avoided INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX threads_updated ON threads(updated_at);

-- One row per version: the patch that made it (version 1 has "[]").
CREATE TABLE state_versions (
  thread_id  TEXT NOT NULL,
  version    INTEGER NOT NULL,
  patch      BLOB NOT NULL,
  author     TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  event_id   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (thread_id, version)
) WITHOUT ROWID;

-- Periodic full documents; any version = nearest snapshot at or below it + later patches.
CREATE TABLE state_snapshots (
  thread_id TEXT NOT NULL,
  version   INTEGER NOT NULL,
  doc       BLOB NOT NULL,
  PRIMARY KEY (thread_id, version)
);

CREATE TABLE artifacts (
  ref               TEXT PRIMARY KEY,
  thread_id         TEXT NOT NULL,
  type              TEXT NOT NULL,
  mime              TEXT NOT NULL,
  name              TEXT NOT NULL DEFAULT '',
  size              INTEGER NOT NULL,
  hash              TEXT NOT NULL,
  preview_text      TEXT NOT NULL,
  preview_lines     INTEGER NOT NULL,
  preview_truncated INTEGER NOT NULL,
  created_by        TEXT NOT NULL DEFAULT '',
  capability        TEXT NOT NULL DEFAULT '',
  source_refs       TEXT NOT NULL DEFAULT '[]',
  created_at        TEXT NOT NULL,
  UNIQUE (thread_id, hash)
);
CREATE INDEX artifacts_thread ON artifacts(thread_id, ref);

CREATE TABLE artifact_content (
  ref     TEXT PRIMARY KEY,
  content BLOB NOT NULL
);

CREATE TABLE events (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  thread_id TEXT NOT NULL,
  type      TEXT NOT NULL,
  at        TEXT NOT NULL,
  data      BLOB NOT NULL
);
CREATE INDEX events_thread ON events(thread_id, id);
`

// migration is DDL applied once, tracked by name in schema_migrations.
type migration struct{ name, sql string }

// migrations run in this order at open; a name, once shipped, never changes meaning (a
// database that applied it skips it), so a new layout is a new migration.
var migrations = []migration{
	{"0001_core", coreSchema},
	{"0100_capability_cache_calls", capabilitySchema},
	{"0111_search_fts_rowid_threads", searchMigration0111},
	{"0120_a2a", hopSchema},
	{"0200_search_background_external", searchMigration0200},
	{"0201_search_prefix_index", searchMigration0201},
	{"0300_search_own_file", searchMigration0300},
	{"0400_artifacts_hash", `CREATE INDEX IF NOT EXISTS artifacts_hash ON artifacts(hash)`},
	{"0410_artifact_short_ref", shortRefMigration},
	{"0500_events_plain_rowid", eventsRowidMigration},
	{"0510_threads_by_minute", threadsMinuteMigration},
	// Only a store whose bodies live in a bucket asks by hash alone (bucketHashIndex).
	{"0520_artifacts_hash_for_buckets", `DROP INDEX IF EXISTS artifacts_hash`},
}

// bucketHashIndex is created when a store opens with a bucket: its garbage collection asks
// which listed bodies any artifact references. Without a bucket nothing asks, and keeping
// it cost every put a page of its commit (TestCommitPages).
const bucketHashIndex = `CREATE INDEX IF NOT EXISTS artifacts_hash ON artifacts(hash)`

// threadsMinuteMigration orders the thread listing by the minute of each thread's latest
// write: every write moves updated_at, and an index of it was rewritten by every commit (a
// page of a patch's five), while an entry of this one moves once a minute at most (SQLite
// leaves an index entry whose value did not change). ListThreads sorts within a minute.
const threadsMinuteMigration = `DROP INDEX IF EXISTS threads_updated;
CREATE INDEX IF NOT EXISTS threads_minute ON threads(substr(updated_at, 1, 16));`

// shortRefMigration indexes each artifact's short ref (its ref's last 6 digits), the one ref
// relay shows: store-wide lookups of a ref given without its thread, and the check that a
// new ref's short form is free. The expression must match shortExpr.
const shortRefMigration = `CREATE INDEX artifacts_short ON artifacts(substr(ref, 21));`

// eventsRowidMigration drops a page every event's commit wrote for nothing: an insert into
// an AUTOINCREMENT table also rewrites the table's row in sqlite_sequence (a sequential
// patch wrote 6.5 pages on average, 5.6 without it). Events are never deleted, so a plain
// rowid's max+1 never reuses an id either. Rebuilding the table copies each row once, ids
// kept.
const eventsRowidMigration = `
CREATE TABLE events_rowid (
  id        INTEGER PRIMARY KEY,
  thread_id TEXT NOT NULL,
  type      TEXT NOT NULL,
  at        TEXT NOT NULL,
  data      BLOB NOT NULL
);
INSERT INTO events_rowid(id, thread_id, type, at, data) SELECT id, thread_id, type, at, data FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_rowid RENAME TO events;
CREATE INDEX events_thread ON events(thread_id, id);
`
