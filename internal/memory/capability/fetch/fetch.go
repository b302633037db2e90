// Package fetch is the built-in http.fetch capability: GET a URL, store the body as an
// artifact, return a bounded preview. It refuses internal targets (loopback, private,
// link-local, …) by checking the resolved address at dial time, so DNS rebinding and
// redirects cannot reach them, unless the caller explicitly allows them.
package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/plugin"
)

// Name is the capability name.
const Name = "http.fetch"

// Defaults, the limits agents already expect from the older memory daemon.
const (
	DefaultMaxBytes     = 10 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
	previewTextBytes    = 1024
)

// Options configure the fetcher.
type Options struct {
	MaxBytes     int64
	Timeout      time.Duration
	MaxRedirects int
	// Allow lists address ranges that are reachable even though they are internal
	// (e.g. 127.0.0.1/32 for a local test server). Empty means no internal address.
	Allow []netip.Prefix
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	return o
}

// BlockedError says the target address is internal and not allowed.
type BlockedError struct {
	Addr   netip.Addr
	Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("refused to connect to %s: %s addresses are blocked (SSRF guard); allow them with RELAY_FETCH_ALLOW=<cidr> if you trust the target", e.Addr, e.Reason)
}

// Special-purpose ranges (IANA registries) that net/netip has no predicate for.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	benchmark   = netip.MustParsePrefix("198.18.0.0/15")
	reserved4   = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255 broadcast
	}
	// IPv6 forms that carry an IPv4 address a gateway (or the kernel) may reach.
	v4compat   = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible ::a.b.c.d
	v4trans    = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")  // local-use NAT64: a site's own gateway
	teredo     = netip.MustParsePrefix("2001::/32")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	reserved6  = []netip.Prefix{
		netip.MustParsePrefix("100::/64"),      // discard-only
		netip.MustParsePrefix("2001:db8::/32"), // documentation
		netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments (after Teredo)
		netip.MustParsePrefix("fec0::/10"),     // deprecated site-local
		netip.MustParsePrefix("3fff::/20"),     // documentation
		netip.MustParsePrefix("5f00::/16"),     // segment routing SIDs
	}
)

// Classify returns why addr is internal, or "" when it is a public address.
// IPv6 forms that embed an IPv4 address (mapped, compatible, translated, NAT64,
// 6to4, Teredo) are judged by the IPv4 address inside, so [::127.0.0.1] or
// [2002:7f00:1::] cannot reach loopback through a relay or the kernel.
func Classify(addr netip.Addr) string {
	a := addr.WithZone("").Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsUnspecified(), thisNetwork.Contains(a):
		return "unspecified"
	case cgnat.Contains(a):
		return "carrier-grade NAT"
	case benchmark.Contains(a):
		return "benchmark"
	case a.Is4():
		for _, p := range reserved4 {
			if p.Contains(a) {
				return "reserved"
			}
		}
		return ""
	}
	b := a.As16()
	switch {
	case v4compat.Contains(a):
		return embedded(b[12], b[13], b[14], b[15], "IPv4-compatible")
	case v4trans.Contains(a):
		return embedded(b[12], b[13], b[14], b[15], "IPv4-translated")
	case nat64.Contains(a):
		return embedded(b[12], b[13], b[14], b[15], "")
	case nat64Local.Contains(a):
		return "local-use NAT64"
	case sixToFour.Contains(a):
		return embedded(b[2], b[3], b[4], b[5], "")
	case teredo.Contains(a):
		// The client's IPv4 address is stored inverted; the server's is plain.
		if r := embedded(^b[12], ^b[13], ^b[14], ^b[15], ""); r != "" {
			return r
		}
		return embedded(b[4], b[5], b[6], b[7], "")
	}
	for _, p := range reserved6 {
		if p.Contains(a) {
			return "reserved"
		}
	}
	return ""
}

// embedded judges the IPv4 address inside an IPv6 one; whenPublic is the reason
// to give when that IPv4 address is public ("" lets it through).
func embedded(b0, b1, b2, b3 byte, whenPublic string) string {
	if r := Classify(netip.AddrFrom4([4]byte{b0, b1, b2, b3})); r != "" {
		return r + " (embedded in IPv6)"
	}
	return whenPublic
}

func (o Options) check(addr netip.Addr) error {
	reason := Classify(addr)
	if reason == "" {
		return nil
	}
	for _, p := range o.Allow {
		if p.Contains(addr.Unmap()) {
			return nil
		}
	}
	return &BlockedError{Addr: addr.Unmap(), Reason: reason}
}

// NewClient returns an http.Client whose every connection, including redirects, passes the guard.
func NewClient(opts Options) *http.Client {
	opts = opts.withDefaults()
	d := &net.Dialer{
		Timeout: 10 * time.Second,
		// Control sees the already-resolved address, so a name that resolves to 127.0.0.1 is caught.
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("unexpected dial address %q", address)
			}
			return opts.check(ip)
		},
	}
	tr := &http.Transport{
		Proxy:                 nil, // an environment proxy would dial on our behalf and bypass the guard
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > opts.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", opts.MaxRedirects)
			}
			if err := checkScheme(req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		},
	}
}

func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("URLs with credentials (user:pass@) are refused; they would be stored in the thread")
	}
	return nil
}

// Result is what one fetch produced.
type Result struct {
	URL         string
	FinalURL    string
	Status      int
	ContentType string
	Body        []byte
}

// Get fetches rawURL within the limits.
func Get(ctx context.Context, client *http.Client, opts Options, rawURL string) (*Result, error) {
	opts = opts.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", rawURL, err)
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "relay-http.fetch/1")
	resp, err := client.Do(req)
	if err != nil {
		var be *BlockedError
		if errors.As(err, &be) {
			return nil, be
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, fmt.Errorf("GET %s timed out after %s (time limit)", u.Redacted(), opts.Timeout)
		}
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > opts.MaxBytes {
		return nil, fmt.Errorf("GET %s: body is %d bytes, over the %d-byte size limit", u.Redacted(), resp.ContentLength, opts.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxBytes+1))
	if err != nil {
		if isTimeout(err) {
			return nil, fmt.Errorf("GET %s timed out after %s while reading the body (time limit)", u.Redacted(), opts.Timeout)
		}
		return nil, fmt.Errorf("GET %s: read body: %w", u.Redacted(), err)
	}
	if int64(len(body)) > opts.MaxBytes {
		return nil, fmt.Errorf("GET %s: body is over the %d-byte size limit", u.Redacted(), opts.MaxBytes)
	}
	return &Result{URL: u.String(), FinalURL: resp.Request.URL.String(), Status: resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"), Body: body}, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// typeFor maps a Content-Type to an artifact type.
func typeFor(ct string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return memory.TypeJSON
	case mt == "text/html" || mt == "application/xhtml+xml":
		return memory.TypeHTML
	case mt == "text/markdown":
		return memory.TypeMarkdown
	case strings.HasPrefix(mt, "text/") || mt == "application/xml":
		return memory.TypeText
	case mt == "" && utf8.Valid(body):
		return memory.TypeText
	}
	return memory.TypeBinary
}

// ArgsSchema is the http.fetch argument schema.
const ArgsSchema = `{
  "type": "object",
  "required": ["url"],
  "additionalProperties": false,
  "properties": {
    "url": {"type": "string", "minLength": 8, "maxLength": 2048, "pattern": "^[hH][tT][tT][pP][sS]?://"}
  }
}`

// Capability returns http.fetch with the given limits.
func Capability(opts Options) (plugin.Capability, plugin.Handler) {
	opts = opts.withDefaults()
	client := NewClient(opts)
	c := plugin.Capability{
		Name:        Name,
		Description: "GET an http(s) URL, store the body as an artifact, return a bounded preview (10 MB, 30 s, no internal addresses)",
		ArgsSchema:  json.RawMessage(ArgsSchema),
		Cacheable:   true,
		CacheTTL:    5 * time.Minute,
	}
	h := func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		var args struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(req.Args, &args); err != nil {
			return nil, err
		}
		res, err := Get(ctx, client, opts, args.URL)
		if err != nil {
			return nil, err
		}
		typ := typeFor(res.ContentType, res.Body)
		name := nameFor(res.FinalURL, typ)
		ref, err := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: name, Type: typ, Mime: res.ContentType, Content: res.Body})
		if err != nil {
			return nil, fmt.Errorf("store fetched body: %w", err)
		}
		p := memory.MakePreview(typ, res.Body)
		return plugin.Result(ref, map[string]any{
			"url": res.URL, "final_url": res.FinalURL, "status": res.Status, "content_type": res.ContentType,
			"type": typ, "size": len(res.Body), "text": plugin.Head(p.Text, previewTextBytes),
			"truncated": p.Truncated || len(p.Text) > previewTextBytes,
		})
	}
	return c, h
}

func nameFor(raw, typ string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "fetch"
	}
	n := u.Host + u.Path
	n = strings.TrimSuffix(n, "/")
	if len(n) > 150 {
		n = n[:150]
	}
	return n
}
