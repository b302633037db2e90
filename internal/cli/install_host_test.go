package cli

import (
	"errors"
	"testing"
)

// hostStatus reads relay's line in each host's `mcp list` (formats from docs and the
// hosts' own output; see shared notes mcp-hosts.md).
func TestHostStatus(t *testing.T) {
	for _, c := range []struct {
		out  string
		err  error
		want int
	}{
		{"Checking MCP server health...\n\nrelay: /usr/bin/relay mcp - ✓ Connected\n", nil, hostConnected},
		{"relay: /usr/bin/relay mcp - ✗ Failed to connect\n", nil, hostFailed},
		{"Configured MCP servers:\n\n✓ relay: /usr/bin/relay mcp (stdio) - Connected\n", nil, hostConnected},
		{"✗ relay: /usr/bin/relay mcp (stdio) - Disconnected\n", nil, hostFailed},
		{"Name   Command         Args  Env  Cwd  Status   Auth\nrelay  /usr/bin/relay  mcp   -    -    enabled  Unsupported\n", nil, hostConnected},
		{"relay-dev: x - ✓ Connected\nother: y - ✓ Connected\n", nil, hostNotLoaded},
		{"No MCP servers configured.\n", nil, hostNotLoaded},
		{"error: unknown command mcp\n", errors.New("exit status 2"), hostUnknown},
	} {
		if got, line := hostStatus(c.out, c.err); got != c.want {
			t.Errorf("%q: status %d (%q), want %d", c.out, got, line, c.want)
		}
	}
}
