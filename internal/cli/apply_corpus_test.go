package cli

import (
	"context"
	"testing"

	"github.com/relaydev/relay/internal/testsupport/corpus"

	"github.com/relaydev/relay/internal/config"
	"github.com/relaydev/relay/internal/iostreams"
)

// TestApplyRelaycodeE2ECorpus runs `relay apply -y` on every relaycode end-to-end case
// (../shared/corpus/patch/relaycode-e2e): expected tree on success, unchanged tree on failure.
func TestApplyRelaycodeE2ECorpus(t *testing.T) {
	corpus.RunE2E(t, func(t *testing.T, work string, c corpus.E2ECase) error {
		cfg := config.Default("test-project")
		cfg.Dir = work
		cfg.Core.EnableNotifications = false
		ios, _, _, _ := iostreams.Test()
		return applyRun(context.Background(), &ApplyOptions{IO: ios, Config: func() (*config.Config, error) { return cfg, nil },
			File: c.Response(), Yes: true})
	})
}
