package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/tokens"
)

// capDoctorChecks are the capability, search and token-counting diagnostics.
func capDoctorChecks() []doctorCheck {
	return []doctorCheck{
		{Name: "search index", Run: checkFTS},
		{Name: "tokenizer", Run: checkTokenizer},
		{Name: "capabilities", Run: checkCapabilities},
	}
}

func checkFTS(ctx context.Context, f *Factory) checkResult {
	if err := backend.CheckFTS(ctx); err != nil {
		return checkResult{Status: statusFail, Detail: "SQLite FTS5 is not available: " + err.Error(), Hint: "rebuild relay with modernc.org/sqlite (make build)"}
	}
	return checkResult{Status: statusOK, Detail: "SQLite FTS5 with bm25 and the porter tokenizer"}
}

func checkTokenizer(ctx context.Context, f *Factory) checkResult {
	c, err := tokens.New(tokens.Default)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	if n := c.CountString("hello world"); n != 2 {
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s counted %d tokens in \"hello world\", want 2", c.Name(), n)}
	}
	return checkResult{Status: statusOK, Detail: tokens.Default + " BPE vocabulary embedded (offline)"}
}

func checkCapabilities(ctx context.Context, f *Factory) checkResult {
	c, err := memoryClient(f)
	if err != nil {
		return checkResult{Status: statusWarn, Detail: "skipped: " + err.Error()}
	}
	c.HTTP = shortHTTP()
	caps, err := c.Capabilities(ctx)
	if err != nil {
		var ue *client.UnreachableError
		if errors.As(err, &ue) {
			return checkResult{Status: statusWarn, Detail: "skipped: the daemon is not running", Hint: "relay up"}
		}
		// The daemon check above already reports why the daemon refused; do not fail twice.
		return checkResult{Status: statusWarn, Detail: "skipped: the daemon did not list capabilities: " + err.Error()}
	}
	names := make([]string, len(caps))
	for i, ci := range caps {
		names[i] = ci.Name
	}
	detail := strings.Join(names, ", ")
	if allow := f.Getenv("RELAY_FETCH_ALLOW"); allow != "" {
		detail += "; this shell sets RELAY_FETCH_ALLOW=" + allow + " (applies to a daemon started from it)"
	}
	return checkResult{Status: statusOK, Detail: detail}
}
