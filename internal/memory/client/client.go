// Package client is the Go client of the relay daemon's HTTP API (docs/api.md), used by the CLI.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blobgc"
)

// Client talks to one daemon.
type Client struct {
	BaseURL string
	Token   string
	// TokenFrom says where Token came from, for messages: "RELAY_TOKEN" or the path of
	// the config.json it was read from.
	TokenFrom string
	HTTP      *http.Client

	offline error // set by FromHome when no daemon holds the store
}

// FromHome finds the daemon of $RELAY_HOME: RELAY_URL, else daemon.json's url, else the
// config.json port on 127.0.0.1. The token is RELAY_TOKEN or config.json's token.
func FromHome(home string, getenv func(string) string) (*Client, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := relayhome.LoadUser(home)
	if err != nil {
		return nil, err
	}
	c := &Client{Token: u.Token, TokenFrom: relayhome.UserFile(home), HTTP: &http.Client{}}
	if t := getenv("RELAY_TOKEN"); t != "" {
		c.Token, c.TokenFrom = t, "RELAY_TOKEN"
	}
	switch info, err := relayhome.ReadInfo(home); {
	case getenv("RELAY_URL") != "":
		c.BaseURL = strings.TrimRight(getenv("RELAY_URL"), "/")
	case err == nil && info.URL != "":
		c.BaseURL = info.URL
	case err == nil || errors.Is(err, fs.ErrNotExist):
		c.BaseURL = "http://127.0.0.1:" + strconv.Itoa(u.Port)
	default:
		return nil, err
	}
	if getenv("RELAY_URL") == "" {
		// Only the daemon holding this RELAY_HOME is ours: whatever else listens on the
		// port (another user's or another test's daemon) must never receive our data.
		if pid, err := relayhome.LockHolder(home); err == nil && pid == 0 {
			c.offline = errors.New("no relay daemon is running for " + home)
		}
	}
	return c, nil
}

// APIError is a non-2xx answer from the daemon.
type APIError struct {
	Status         int
	Code           string
	Message        string
	CurrentVersion int      // version_conflict
	Op             *int     // invalid_patch / test_failed
	Path           string   // invalid_patch / test_failed
	DidYouMean     []string // unknown_capability: the closest known names
	TokenFrom      string   // unauthorized: where the refused token came from (Client.TokenFrom)
	// RetryAfter is the daemon's Retry-After (503 unavailable: its store's database is
	// restarting or unreachable), zero when it sent none.
	RetryAfter time.Duration
	// ThreadID is, for name_taken, the thread that has the name.
	ThreadID string
}

// Unavailable reports whether err is the daemon's 503: its store did not answer, and the
// request may succeed when repeated after RetryAfter.
func Unavailable(err error) (retryAfter time.Duration, ok bool) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		return 0, false
	}
	if ae.RetryAfter <= 0 {
		return time.Second, true
	}
	return ae.RetryAfter, true
}

// readRetries is how often a read answered 503 is repeated (after each Retry-After, at most
// maxRetryWait apart) before the error is returned: a database restart usually takes a
// second or two.
const (
	readRetries  = 4
	maxRetryWait = 2 * time.Second
)

func (e *APIError) Error() string { return e.Message }

// IsCode reports whether err is an *APIError with the given code.
func IsCode(err error, code string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// UnreachableError means no daemon answered at the URL.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no relay daemon at %s (%v); start it with relay up", e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// Request is one API call.
type Request struct {
	Method  string
	Path    string // with query
	Body    io.Reader
	Type    string // Content-Type
	Headers map[string]string
}

// Do sends req and returns the response; non-2xx answers become *APIError. A read (GET
// or HEAD without a body) answered 503 is repeated after the daemon's Retry-After a few
// times; a write is not, since it may have been applied.
func (c *Client) Do(ctx context.Context, req Request) (*http.Response, error) {
	for try := 0; ; try++ {
		resp, err := c.do(ctx, req)
		wait, unavailable := Unavailable(err)
		if !unavailable || try == readRetries || req.Body != nil || (req.Method != http.MethodGet && req.Method != http.MethodHead) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(wait, maxRetryWait)):
		}
	}
}

func (c *Client) do(ctx context.Context, req Request) (*http.Response, error) {
	if c.offline != nil {
		return nil, &UnreachableError{URL: c.BaseURL, Err: c.offline}
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.BaseURL+req.Path, req.Body)
	if err != nil {
		return nil, err
	}
	if req.Type != "" {
		hr.Header.Set("Content-Type", req.Type)
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{URL: c.BaseURL, Err: err}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		err := decodeError(resp)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			ae.TokenFrom = c.TokenFrom
		}
		return nil, err
	}
	return resp, nil
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Code           string   `json:"code"`
			Message        string   `json:"message"`
			CurrentVersion int      `json:"current_version"`
			Op             *int     `json:"op"`
			Path           string   `json:"path"`
			DidYouMean     []string `json:"did_you_mean"`
			ThreadID       string   `json:"thread_id"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil || body.Error.Code == "" {
		return &APIError{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode),
			Message: fmt.Sprintf("daemon answered %s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	e := body.Error
	ae := &APIError{Status: resp.StatusCode, Code: e.Code, Message: e.Message, CurrentVersion: e.CurrentVersion, Op: e.Op, Path: e.Path, DidYouMean: e.DidYouMean, ThreadID: e.ThreadID}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 && n <= 3600 {
		ae.RetryAfter = time.Duration(n) * time.Second
	}
	return ae
}

func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	return c.doJSON(ctx, Request{Method: http.MethodGet, Path: path}, out)
}

func (c *Client) doJSON(ctx context.Context, req Request, out any) error {
	resp, err := c.Do(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if raw, ok := out.(*json.RawMessage); ok {
		b, err := io.ReadAll(resp.Body)
		*raw = bytes.TrimSpace(b)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode daemon answer to %s %s: %w", req.Method, req.Path, err)
	}
	return nil
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func esc(s string) string { return url.PathEscape(s) }

// Health calls GET /health.
func (c *Client) Health(ctx context.Context) error {
	return c.getJSON(ctx, "/health", nil)
}

// Status is GET /status.
type Status struct {
	Version       string            `json:"version"`
	API           string            `json:"api"`
	StartedAt     string            `json:"started_at"`
	UptimeSeconds float64           `json:"uptime_seconds"`
	PID           int               `json:"pid"`
	URL           string            `json:"url"`
	Auth          bool              `json:"auth"`
	Store         memory.StoreStats `json:"store"`
	MirrorError   string            `json:"mirror_error"`
	// StoreError says the store did not answer (Store then holds only its location).
	StoreError string `json:"store_error,omitempty"`
	// Listen is the state of a shared store's notifications from other daemons.
	Listen *memory.ListenInfo `json:"listen,omitempty"`
}

// Status calls GET /status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.getJSON(ctx, "/status", &s)
	return s, err
}

// CreateThread calls POST /threads.
func (c *Client) CreateThread(ctx context.Context, name string) (memory.Thread, error) {
	return c.CreateThreadIf(ctx, name, memory.NameTakenFail)
}

// CreateThreadIf calls POST /threads saying what to do when another thread has the name
// (memory.NameTakenFail, NameTakenReuse or NameTakenNext); a taken name fails with an
// *APIError of code name_taken whose ThreadID is that thread.
func (c *Client) CreateThreadIf(ctx context.Context, name, ifNameTaken string) (memory.Thread, error) {
	body := map[string]string{"name": name}
	if ifNameTaken != "" {
		body["if_name_taken"] = ifNameTaken
	}
	var t memory.Thread
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: "/threads", Body: jsonBody(body), Type: "application/json"}, &t)
	return t, err
}

// ListThreads calls GET /threads.
func (c *Client) ListThreads(ctx context.Context, limit int) ([]memory.Thread, error) {
	var out struct {
		Threads []memory.Thread `json:"threads"`
	}
	err := c.getJSON(ctx, "/threads?limit="+strconv.Itoa(limit), &out)
	return out.Threads, err
}

// ThreadDetail is GET /threads/{id}.
type ThreadDetail struct {
	memory.Thread
	Header json.RawMessage `json:"header"`
}

// GetThread calls GET /threads/{id}.
func (c *Client) GetThread(ctx context.Context, id string) (ThreadDetail, error) {
	var t ThreadDetail
	err := c.getJSON(ctx, "/threads/"+esc(id), &t)
	return t, err
}

// State calls GET /threads/{id}/state (version 0 = latest).
func (c *Client) State(ctx context.Context, id string, version int) (json.RawMessage, error) {
	p := "/threads/" + esc(id) + "/state"
	if version > 0 {
		p += "?version=" + strconv.Itoa(version)
	}
	var raw json.RawMessage
	err := c.getJSON(ctx, p, &raw)
	return raw, err
}

// Header calls GET /threads/{id}/state/header.
func (c *Client) Header(ctx context.Context, id string) (json.RawMessage, bool, error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/threads/" + esc(id) + "/state/header"})
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return bytes.TrimSpace(b), resp.Header.Get("X-Relay-Truncated") == "true", err
}

// HeaderDelta is the answer of GET /threads/{id}/state/header?since=vN: Delta, the body
// {"since":N,"v":M,…changed members} (apply it with statedoc.ApplyHeaderDelta), or, when Delta
// is nil, the full header in Full (the delta would not have been smaller, or vN is unknown).
type HeaderDelta struct {
	Since     int
	Version   int
	Delta     json.RawMessage
	Full      json.RawMessage
	Truncated bool
}

// Body is the answer as the API sent it: the delta, or the full header. Every front door
// shows this, never the struct, so the shape is the API's everywhere.
func (d HeaderDelta) Body() json.RawMessage {
	if d.Delta != nil {
		return d.Delta
	}
	return d.Full
}

// HeaderSince calls GET /threads/{id}/state/header?since=vN: what changed in the header since
// version since, or the full header when that is smaller or since is unknown.
func (c *Client) HeaderSince(ctx context.Context, id string, since int) (HeaderDelta, error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/threads/" + esc(id) + "/state/header?since=v" + strconv.Itoa(since)})
	if err != nil {
		return HeaderDelta{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxHeaderBody))
	if err != nil {
		return HeaderDelta{}, err
	}
	b = bytes.TrimSpace(b)
	d := HeaderDelta{Since: since, Truncated: resp.Header.Get("X-Relay-Truncated") == "true"}
	d.Version, _ = strconv.Atoi(resp.Header.Get("X-Relay-Version"))
	if resp.Header.Get("X-Relay-Delta") != "delta" {
		d.Full = b
		return d, nil
	}
	var head struct {
		Since *int `json:"since"`
		V     int  `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Since == nil {
		return HeaderDelta{}, fmt.Errorf("read header delta: not a delta body (%v)", err)
	}
	d.Version, d.Delta = head.V, b
	return d, nil
}

// AppendEvent calls POST /threads/{id}/events: a client's own event (ask.answered,
// txn.applied, …) with its summary as data.
func (c *Client) AppendEvent(ctx context.Context, id, typ string, data any) (memory.Event, error) {
	var ev memory.Event
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: "/threads/" + esc(id) + "/events", Type: "application/json",
		Body: jsonBody(map[string]any{"type": typ, "data": data})}, &ev)
	return ev, err
}

// maxHeaderBody bounds a header or delta read; the daemon caps headers at 2 KB.
const maxHeaderBody = 64 << 10

// Patch calls POST /threads/{id}/state/patch; expected 0 sends no version.
func (c *Client) Patch(ctx context.Context, id string, patch []byte, expected int, author string) (memory.PatchResult, error) {
	req := Request{Method: http.MethodPost, Path: "/threads/" + esc(id) + "/state/patch", Body: bytes.NewReader(patch), Type: "application/json"}
	if author != "" {
		req.Path += "?author=" + url.QueryEscape(author)
	}
	if expected > 0 {
		req.Headers = map[string]string{"If-Match": memory.StateRef(expected)}
	}
	var res memory.PatchResult
	err := c.doJSON(ctx, req, &res)
	return res, err
}

// Versions calls GET /threads/{id}/state/versions.
func (c *Client) Versions(ctx context.Context, id string, after, limit int) ([]memory.Version, error) {
	var out struct {
		Versions []memory.Version `json:"versions"`
	}
	err := c.getJSON(ctx, fmt.Sprintf("/threads/%s/state/versions?after=%d&limit=%d", esc(id), after, limit), &out)
	return out.Versions, err
}

// PutArtifactParams describe an upload.
type PutArtifactParams struct {
	Name, Type, CreatedBy, Capability string
	SourceRefs                        []string
	Content                           io.Reader
}

// PutArtifact calls POST /threads/{id}/artifacts with the raw body.
func (c *Client) PutArtifact(ctx context.Context, id string, p PutArtifactParams) (memory.Artifact, error) {
	q := url.Values{}
	for k, v := range map[string]string{"name": p.Name, "type": p.Type, "created_by": p.CreatedBy, "capability": p.Capability} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(p.SourceRefs) > 0 {
		q.Set("source_refs", strings.Join(p.SourceRefs, ","))
	}
	path := "/threads/" + esc(id) + "/artifacts"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var a memory.Artifact
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: path, Body: p.Content, Type: "application/octet-stream"}, &a)
	return a, err
}

// GetArtifact calls GET /threads/{id}/artifacts/{ref}.
func (c *Client) GetArtifact(ctx context.Context, id, ref string) (memory.Artifact, error) {
	var a memory.Artifact
	err := c.getJSON(ctx, "/threads/"+esc(id)+"/artifacts/"+esc(ref), &a)
	return a, err
}

// ArtifactRaw calls GET /threads/{id}/artifacts/{ref}?raw=1; the caller closes the body.
func (c *Client) ArtifactRaw(ctx context.Context, id, ref string) (io.ReadCloser, error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/threads/" + esc(id) + "/artifacts/" + esc(ref) + "?raw=1"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// FindArtifact calls GET /artifacts/{ref}: an artifact named by its full or short ref
// without its thread (the answer's thread_id says which).
func (c *Client) FindArtifact(ctx context.Context, ref string) (memory.Artifact, error) {
	var a memory.Artifact
	err := c.getJSON(ctx, "/artifacts/"+esc(ref), &a)
	return a, err
}

// Artifact resolves a ref for a caller that may have a thread: in thread id when one is
// given, else (or when that thread has no such artifact: a ref passed on from another
// thread) in the whole store, where a full or short ref names one artifact. The answer's
// ThreadID is the artifact's thread.
func (c *Client) Artifact(ctx context.Context, id, ref string) (memory.Artifact, error) {
	if id == "" {
		return c.FindArtifact(ctx, ref)
	}
	a, err := c.GetArtifact(ctx, id, ref)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && (memory.ValidRef(ref) || memory.IsShortRef(ref)) {
		if found, ferr := c.FindArtifact(ctx, ref); ferr == nil {
			return found, nil
		}
	}
	return a, err
}

// ListArtifacts calls GET /threads/{id}/artifacts.
func (c *Client) ListArtifacts(ctx context.Context, id, typ string, limit int) ([]memory.Artifact, error) {
	var out struct {
		Artifacts []memory.Artifact `json:"artifacts"`
	}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if typ != "" {
		q.Set("type", typ)
	}
	err := c.getJSON(ctx, "/threads/"+esc(id)+"/artifacts?"+q.Encode(), &out)
	return out.Artifacts, err
}

// Events calls GET /threads/{id}/events.
func (c *Client) Events(ctx context.Context, id string, after int64, limit int) ([]memory.Event, error) {
	var out struct {
		Events []memory.Event `json:"events"`
	}
	err := c.getJSON(ctx, fmt.Sprintf("/threads/%s/events?after=%d&limit=%d", esc(id), after, limit), &out)
	return out.Events, err
}

// Stream follows GET /threads/{id}/events/stream from after, calling fn for each event,
// and reconnects with Last-Event-ID when the connection drops, until ctx ends or fn fails.
func (c *Client) Stream(ctx context.Context, id string, after int64, fn func(memory.Event) error) error {
	retry := 0
	for {
		last, err := c.streamOnce(ctx, id, after, fn)
		if last > after {
			after, retry = last, 0
		}
		var ae *APIError
		wait, unavailable := Unavailable(err)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case unavailable:
			// The daemon is up but its store is not (a database restart): a follower
			// waits for it, however long, and resumes from the last event it saw.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(wait, maxRetryWait)):
			}
			continue
		case errors.As(err, &ae), errors.Is(err, errStop):
			return err
		case err != nil && retry >= 5:
			return err
		}
		retry++
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(retry) * 200 * time.Millisecond):
		}
	}
}

var errStop = errors.New("stream callback failed")

type stopError struct{ err error }

func (e stopError) Error() string   { return e.err.Error() }
func (e stopError) Unwrap() error   { return e.err }
func (e stopError) Is(t error) bool { return t == errStop }

func (c *Client) streamOnce(ctx context.Context, id string, after int64, fn func(memory.Event) error) (int64, error) {
	resp, err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/threads/" + esc(id) + "/events/stream",
		Headers: map[string]string{"Last-Event-ID": strconv.FormatInt(after, 10), "Accept": "text/event-stream"}})
	if err != nil {
		return after, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				var e memory.Event
				if err := json.Unmarshal(data, &e); err != nil {
					return after, fmt.Errorf("bad event from daemon: %w", err)
				}
				data = data[:0]
				if err := fn(e); err != nil {
					return after, stopError{err}
				}
				after = e.ID
			}
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return after, err
	}
	return after, io.ErrUnexpectedEOF
}

// SweepBucket calls POST /store/gc (GET with dryRun): the garbage collection of the
// store's artifact bucket; grace < 0 is the daemon's default.
func (c *Client) SweepBucket(ctx context.Context, dryRun bool, grace time.Duration) (blobgc.Report, error) {
	q := url.Values{}
	if grace >= 0 {
		q.Set("grace", grace.String())
	}
	method := http.MethodPost
	if dryRun {
		method = http.MethodGet
	}
	var rep blobgc.Report
	err := c.doJSON(ctx, Request{Method: method, Path: "/store/gc?" + q.Encode()}, &rep)
	return rep, err
}

// SigninCode is POST /auth/codes: a one-time code the web UI trades for the token.
type SigninCode struct {
	Code      string `json:"code"`
	ExpiresAt string `json:"expires_at"`
}

// NewSigninCode asks the daemon for a one-time web UI sign-in code (needs the token).
func (c *Client) NewSigninCode(ctx context.Context) (SigninCode, error) {
	var out SigninCode
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: "/auth/codes"}, &out)
	return out, err
}

// TradeSigninCode is POST /auth/code, as the web UI calls it: the code for the token, once.
func (c *Client) TradeSigninCode(ctx context.Context, code string) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := c.doJSON(ctx, Request{Method: http.MethodPost, Path: "/auth/code", Body: jsonBody(map[string]string{"code": code}), Type: "application/json"}, &out)
	return out.Token, err
}
