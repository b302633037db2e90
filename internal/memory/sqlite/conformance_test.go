package sqlite

import (
	"testing"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store { return openTest(t, t.TempDir()) })
}
