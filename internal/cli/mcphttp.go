package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/relaydev/relay/internal/mcp"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/relayhome"
)

// mcpHTTPDefault is where relay mcp --http listens when given no address:
// loopback, on a free port.
const mcpHTTPDefault = "127.0.0.1:0"

// mcpServeHTTP serves relay's MCP tools over Streamable HTTP at addr until
// ctx ends. Callers need the daemon's API token, and pass the daemon's own
// Host and Origin checks.
func mcpServeHTTP(ctx context.Context, f *Factory, o mcp.Options, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("--http %q: want HOST:PORT (e.g. 127.0.0.1:8765; port 0 picks a free one): %v", addr, err)
	}
	home, err := f.Home()
	if err != nil {
		return err
	}
	u, _, err := relayhome.EnsureToken(home) // the token relay up serves with
	if err != nil {
		return WithHint(err, "relay doctor")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return WithHint(fmt.Errorf("listen on %s: %w", addr, err), "pick another address: relay mcp --http 127.0.0.1:0")
	}
	if !relayhome.IsLoopbackHost(host) {
		fmt.Fprintf(f.IO.ErrOut, "relay mcp: Warning: listening on %s, not loopback: anyone who can reach it and holds the token can use your tools\n", ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	token := []byte(u.Token)
	inner := mcp.New(mcp.Wire(o)).HTTPHandler(ctx)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !server.AllowedHost(r.Host):
			http.Error(w, fmt.Sprintf("host %q is not allowed (DNS-rebinding protection); use http://%s%s", r.Host, ln.Addr(), mcp.HTTPPath), http.StatusForbidden)
		case server.CrossSite(r) != "":
			// every method: the MCP spec asks servers to check Origin on all connections
			http.Error(w, server.CrossSite(r)+" may not use relay's tools", http.StatusForbidden)
		case !server.HasToken(r, token):
			w.Header().Set("WWW-Authenticate", `Bearer realm="relay"`)
			http.Error(w, "missing or wrong API token; send Authorization: Bearer <token> (the \"token\" of config.json in the relay home, ~/.relay unless RELAY_HOME is set)", http.StatusUnauthorized)
		default:
			inner.ServeHTTP(w, r)
		}
	})}
	fmt.Fprintf(f.IO.ErrOut, "relay mcp: %s\nrelay mcp: serving MCP (Streamable HTTP) at http://%s%s; send Authorization: Bearer <token from %s> (Ctrl-C stops it)\n",
		mcpServes(f), ln.Addr(), mcp.HTTPPath, relayhome.UserFile(home))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("mcp http server: %w", err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
