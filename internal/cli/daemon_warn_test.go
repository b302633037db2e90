package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestWarnExposed(t *testing.T) {
	for _, tt := range []struct {
		host, token string
		warn        bool
	}{
		{"0.0.0.0", "", true},
		{"192.168.1.5", "", true},
		{"0.0.0.0", "s3cret", false},
		{"127.0.0.1", "", false},
		{"localhost", "", false},
		{"::1", "", false},
	} {
		var b bytes.Buffer
		warnExposed(&b, tt.host, tt.token)
		if got := strings.Contains(b.String(), "Warning: listening on "+tt.host+" without an API token"); got != tt.warn {
			t.Errorf("host %q token %q: warning %q, want warning %v", tt.host, tt.token, b.String(), tt.warn)
		}
	}
}
