package memory

import (
	"context"
	"database/sql"
	"sync"
)

// ArtifactHook runs inside the artifact-put transaction; an error aborts the put.
type ArtifactHook func(ctx context.Context, tx *sql.Tx, a Artifact, content []byte) error

type migration struct{ name, sql string }

var (
	regMu         sync.Mutex
	extraMigs     []migration
	artifactHooks []ArtifactHook
)

// RegisterMigration adds DDL that Open applies once (tracked by name), after the core schema,
// in registration order. Call it from an init func.
func RegisterMigration(name, sql string) {
	regMu.Lock()
	defer regMu.Unlock()
	extraMigs = append(extraMigs, migration{name, sql})
}

// RegisterArtifactHook adds a hook run inside every artifact-put transaction (not for
// deduplicated puts). Call it from an init func.
func RegisterArtifactHook(h ArtifactHook) {
	regMu.Lock()
	defer regMu.Unlock()
	artifactHooks = append(artifactHooks, h)
}

func registered() ([]migration, []ArtifactHook) {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]migration(nil), extraMigs...), append([]ArtifactHook(nil), artifactHooks...)
}
