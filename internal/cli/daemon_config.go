package cli

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/relayhome"
)

// daemonConfig is everything the daemon reads from its environment and config.json, read
// and checked once, before anything is served: a bad value stops relay up with the
// variable, the value and what is allowed, instead of a daemon serving without a feature.
type daemonConfig struct {
	LogLevel     slog.Level
	Sync         string
	Mirror       bool // RELAY_MIRROR: the human-readable copy under $RELAY_HOME/threads
	Capabilities server.CapabilityOptions
	// Store and Artifacts locate the store and the artifact bucket (package backend).
	Store, Artifacts string
	// ArtifactsGC is the grace period of the daemon's sweeps of the bucket (0: the
	// default, negative: no automatic sweeps).
	ArtifactsGC time.Duration
}

// A setting names where a value came from, for the error.
type setting struct{ name, value string }

func (s setting) errorf(format string, a ...any) error {
	return WithHint(fmt.Errorf("%s=%q: %s", s.name, s.value, fmt.Sprintf(format, a...)),
		"fix the value, or unset it for the default (docs/capabilities.md lists every setting)")
}

// loadDaemonConfig merges config.json's limits with the environment (the environment wins).
func loadDaemonConfig(getenv func(string) string, u *relayhome.User) (daemonConfig, error) {
	var c daemonConfig
	// pick is the environment's value, else the file's under key (the error names either).
	pick := func(env, key, fromFile string) (setting, bool) {
		if v := getenv(env); v != "" {
			return setting{env, v}, true
		}
		if fromFile != "" {
			return setting{"config.json " + key, fromFile}, true
		}
		return setting{}, false
	}

	switch s, _ := pick("RELAY_LOG_LEVEL", "", ""); strings.ToLower(s.value) {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return c, s.errorf("use debug, info, warn or error")
	}
	switch s, _ := pick("RELAY_DB_SYNC", "", ""); strings.ToLower(s.value) {
	case "", "full":
		c.Sync = "full"
	case "normal":
		c.Sync = "normal"
	default:
		return c, s.errorf("use full (every commit on disk before it is acknowledged) or normal")
	}

	switch s, _ := pick("RELAY_MIRROR", "", ""); strings.ToLower(s.value) {
	case "", "off", "0", "false", "no":
	case "on", "1", "true", "yes":
		c.Mirror = true
	default:
		return c, s.errorf("use on (write threads/<id>/state.json, events.log and artifacts/ after each commit) or off")
	}

	allow := strings.Join(u.Fetch.Allow, ",")
	if s, ok := pick("RELAY_FETCH_ALLOW", "fetch.allow", allow); ok {
		for _, f := range strings.Split(s.value, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			p, err := netip.ParsePrefix(f)
			if err != nil {
				a, aerr := netip.ParseAddr(f)
				if aerr != nil {
					return c, s.errorf("%q is not an IP address or CIDR (e.g. 127.0.0.1 or 10.0.0.0/8)", f)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.Capabilities.Fetch.Allow = append(c.Capabilities.Fetch.Allow, p)
		}
	}
	if s, ok := pick("RELAY_FETCH_TIMEOUT", "fetch.timeout", u.Fetch.Timeout); ok {
		d, err := time.ParseDuration(s.value)
		if err != nil || d <= 0 || d > time.Hour {
			return c, s.errorf("use a duration between 1ms and 1h, e.g. 10s")
		}
		c.Capabilities.Fetch.Timeout = d
	}
	fileBytes := ""
	if u.Fetch.MaxBytes != 0 {
		fileBytes = strconv.FormatInt(u.Fetch.MaxBytes, 10)
	}
	if s, ok := pick("RELAY_FETCH_MAX_BYTES", "fetch.max_bytes", fileBytes); ok {
		n, err := strconv.ParseInt(s.value, 10, 64)
		if err != nil || n < 1 || n > 1<<30 {
			return c, s.errorf("use a number of bytes between 1 and %d", 1<<30)
		}
		c.Capabilities.Fetch.MaxBytes = n
	}
	fileHops := ""
	if u.A2A.MaxHops != 0 {
		fileHops = strconv.Itoa(u.A2A.MaxHops)
	}
	if s, ok := pick("RELAY_A2A_MAX_HOPS", "a2a.max_hops", fileHops); ok {
		n, err := strconv.Atoi(s.value)
		if err != nil || n < 1 || n > 1_000_000 {
			return c, s.errorf("use a whole number of hops between 1 and 1000000")
		}
		c.Capabilities.MaxHops = n
	}
	// A store URL may carry a password: errors name the setting, never echo the value.
	if s, ok := pick("RELAY_STORE", "store.url", u.Store.URL); ok {
		if _, err := backend.Kind(s.value); err != nil {
			return c, WithHint(fmt.Errorf("%s: %v", s.name, err), "use sqlite:// or postgres://user@host/db (docs/team.md)")
		}
		c.Store = s.value
	}
	if s, ok := pick("RELAY_ARTIFACTS", "store.artifacts", u.Store.Artifacts); ok {
		c.Artifacts = s.value
	}
	if s, ok := pick("RELAY_ARTIFACTS_GC", "store.artifacts_gc", u.Store.ArtifactsGC); ok {
		switch d, err := time.ParseDuration(s.value); {
		case strings.EqualFold(s.value, "off"):
			c.ArtifactsGC = -1
		case err != nil || d < time.Hour:
			return c, s.errorf("use off, or the grace period of the bucket's automatic sweeps, at least 1h (default 24h): unreferenced bodies younger than it are kept")
		default:
			c.ArtifactsGC = d
		}
	}
	return c, c.Capabilities.Validate()
}
