package server

import (
	"context"
	"strings"
	"testing"
)

// The daemon never serves without a token by accident: an empty token is
// refused unless NoAuth says so, and NoAuth is refused off loopback.
func TestRunRefusesToServeOpen(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    RunOptions
		want string
	}{
		{"no token", RunOptions{}, "refusing to serve without an API token; run relay init"},
		{"no-auth on all interfaces", RunOptions{NoAuth: true, Host: "0.0.0.0"}, "only a loopback address may run with --no-auth"},
		{"no-auth on ipv6 any", RunOptions{NoAuth: true, Host: "::"}, "only a loopback address"},
		{"no-auth on a LAN address", RunOptions{NoAuth: true, Host: "192.168.1.10"}, "only a loopback address"},
		{"no-auth on a name", RunOptions{NoAuth: true, Host: "example.com"}, "only a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Home = t.TempDir()
			err := Run(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
		})
	}
}
