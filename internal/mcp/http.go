package mcp

import (
	"context"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where relay mcp --http serves the protocol.
const HTTPPath = "/mcp"

// HTTPHandler serves the server over the SDK's Streamable HTTP transport at
// HTTPPath, every session against the same tools; ctx bounds the thread
// watches as Run's does. It checks no caller: the command wraps it in the
// daemon's token, Host and Origin checks.
func (s *Server) HTTPHandler(ctx context.Context) http.Handler {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.watchDefault(ctx)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, nil)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	return mux
}
