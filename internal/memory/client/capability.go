package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
)

// CapabilityInfo is one entry of GET /cap/list.
type CapabilityInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	ArgsSchema  json.RawMessage `json:"args_schema"`
	Cacheable   bool            `json:"cacheable"`
	CacheTTLSec int64           `json:"cache_ttl_sec"`
}

// Capabilities calls GET /cap/list.
func (c *Client) Capabilities(ctx context.Context) ([]CapabilityInfo, error) {
	var out struct {
		Capabilities []CapabilityInfo `json:"capabilities"`
	}
	err := c.getJSON(ctx, "/cap/list", &out)
	return out.Capabilities, err
}

// InvokeRequest is the body of POST /cap/invoke.
type InvokeRequest struct {
	ThreadID   string          `json:"thread_id"`
	Capability string          `json:"capability"`
	Args       json.RawMessage `json:"args"`
	NoCache    bool            `json:"no_cache,omitempty"`
}

// Invocation is the answer of POST /cap/invoke: the full result is the artifact.
type Invocation struct {
	Capability  string          `json:"capability"`
	ThreadID    string          `json:"thread_id"`
	ArtifactRef string          `json:"artifact_ref"`
	Preview     json.RawMessage `json:"preview"`
	Cached      bool            `json:"cached"`
	DurationMS  int64           `json:"duration_ms"`
	EventID     int64           `json:"event_id"`
}

// Invoke calls POST /cap/invoke.
func (c *Client) Invoke(ctx context.Context, r InvokeRequest) (Invocation, error) {
	var out Invocation
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: "/cap/invoke", Body: jsonBody(r), Type: "application/json"}, &out)
	return out, err
}

// Stats calls GET /threads/{id}/stats and decodes the token-savings figures into out.
func (c *Client) Stats(ctx context.Context, id string, out any) error {
	return c.getJSON(ctx, "/threads/"+esc(id)+"/stats", out)
}

// Report is a built report: its bytes, and the artifact it was stored as ("" when not stored).
type Report struct {
	Body        []byte
	ArtifactRef string
}

// BuildReport calls POST /reports/{id}; format is "md" or "json".
func (c *Client) BuildReport(ctx context.Context, id, format string, store bool) (Report, error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodPost, Path: "/reports/" + esc(id),
		Body: jsonBody(map[string]any{"format": format, "store": store}), Type: "application/json"})
	if err != nil {
		return Report{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReport))
	return Report{Body: b, ArtifactRef: resp.Header.Get("X-Relay-Artifact-Ref")}, err
}

// maxReport bounds a report read into memory; reports summarise, they do not carry content.
const maxReport = 64 << 20

// Export calls GET /threads/{id}/export: the caller reads the zip and closes it. The
// length is -1 when the daemon did not say.
func (c *Client) Export(ctx context.Context, id string) (zip io.ReadCloser, length int64, err error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/threads/" + esc(id) + "/export"})
	if err != nil {
		return nil, 0, err
	}
	return resp.Body, resp.ContentLength, nil
}

// ImportResult is the answer of POST /import.
type ImportResult struct {
	ThreadID     string            `json:"thread_id"`
	FromThreadID string            `json:"from_thread_id"`
	Name         string            `json:"name"`
	AsNew        bool              `json:"as_new"`
	Versions     int               `json:"versions"`
	Artifacts    int               `json:"artifacts"`
	Events       int               `json:"events"`
	RefMap       map[string]string `json:"ref_map,omitempty"`
}

// Import calls POST /import with a bundle zip; asNew imports a copy under fresh ids, named
// name (or, when name is "", the thread's name made unique: "demo (2)").
func (c *Client) Import(ctx context.Context, zip io.Reader, asNew bool, name string) (ImportResult, error) {
	path := "/import"
	if asNew {
		path += "?as_new=1"
		if name != "" {
			path += "&name=" + url.QueryEscape(name)
		}
	}
	var out ImportResult
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: path, Body: zip, Type: "application/zip"}, &out)
	return out, err
}
