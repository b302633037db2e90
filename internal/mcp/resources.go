package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relaydev/relay/internal/memory"
)

// Artifacts are resources relay://<thread>/artifacts/<ref>, and a thread's
// state is relay://<thread>/state. The list and the update notifications come
// from the daemon's event stream, so what a host sees follows what any agent
// (or person) stores, not only this session.

// maxListed bounds the artifacts of one thread kept in resources/list; the
// oldest drop out first (they stay readable through the template).
const maxListed = 500

// maxResource bounds one resources/read.
const maxResource = 1 << 20

var (
	threadRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F-]{1,64}$`) })
	refRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`) })
)

// ArtifactURI names an artifact as a resource.
func ArtifactURI(thread, ref string) string { return "relay://" + thread + "/artifacts/" + ref }

// StateURI names a thread's state document as a resource.
func StateURI(thread string) string { return "relay://" + thread + "/state" }

// parseURI splits relay://<thread>/artifacts/<ref> or relay://<thread>/state;
// ref is "" for the state.
func parseURI(uri string) (thread, ref string, err error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "relay" || !threadRe().MatchString(u.Host) || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("%q is not a relay resource (relay://<thread>/artifacts/<ref> or relay://<thread>/state)", uri)
	}
	switch p := u.Path; {
	case p == "/state":
		return strings.ToLower(u.Host), "", nil
	case strings.HasPrefix(p, "/artifacts/") && refRe().MatchString(strings.TrimPrefix(p, "/artifacts/")):
		return strings.ToLower(u.Host), strings.TrimPrefix(p, "/artifacts/"), nil
	}
	return "", "", fmt.Errorf("%q is not a relay resource (relay://<thread>/artifacts/<ref> or relay://<thread>/state)", uri)
}

func (s *Server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	m := s.jobs.Memory
	if m == nil {
		return nil, fmt.Errorf("relay memory is not available in this session")
	}
	thread, ref, err := parseURI(req.Params.URI)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	if ref == "" {
		raw, err := m.State(ctx, thread, 0)
		if err != nil {
			return nil, s.resourceErr(req.Params.URI, err)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(raw)}}}, nil
	}
	meta, err := m.Artifact(ctx, thread, ref)
	if err != nil {
		return nil, s.resourceErr(req.Params.URI, err)
	}
	b, err := m.Content(ctx, thread, meta.Ref, 0, maxResource)
	if err != nil {
		return nil, s.resourceErr(req.Params.URI, err)
	}
	c := &sdk.ResourceContents{URI: req.Params.URI, MIMEType: meta.Mime}
	if meta.Type != "binary" && utf8.Valid(b) {
		c.Text = string(b)
	} else {
		c.Blob = b
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

func (s *Server) resourceErr(uri string, err error) error {
	msg, hint := err.Error(), ""
	if s.jobs.Explain != nil {
		msg, hint = s.jobs.Explain(err)
	}
	if strings.Contains(msg, "not found") || strings.HasPrefix(msg, "no ") {
		return sdk.ResourceNotFoundError(uri)
	}
	if hint != "" {
		msg += " (try: " + hint + ")"
	}
	return fmt.Errorf("%s", msg)
}

// subscribe accepts relay resources and makes sure their thread is watched;
// the SDK keeps the subscriber list.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	thread, _, err := parseURI(req.Params.URI)
	if err != nil {
		return err
	}
	if s.jobs.Memory == nil {
		return fmt.Errorf("relay memory is not available in this session")
	}
	id, err := s.jobs.Memory.Resolve(ctx, thread)
	if err != nil {
		msg, _ := err.Error(), ""
		if s.jobs.Explain != nil {
			msg, _ = s.jobs.Explain(err)
		}
		return fmt.Errorf("%s", msg)
	}
	s.watch(id)
	return nil
}

// listStored registers the default thread's stored artifacts before the session's first
// resources/list is answered: the watch that lists them runs in the background (initialize
// must not wait for the daemon), so that list could come back empty. Once a thread is
// primed the watch keeps it current. It covers the thread's first 500 events.
func (s *Server) listStored(ctx context.Context) {
	if s.jobs.DefaultThread == nil || s.jobs.Memory == nil {
		return
	}
	thread, err := s.jobs.DefaultThread(ctx, false)
	if err != nil || thread == "" {
		return
	}
	s.mu.Lock()
	primed := s.primed[thread]
	s.mu.Unlock()
	if primed {
		return
	}
	s.watch(thread)
	raw, err := s.jobs.Memory.Events(ctx, thread, 0, 500)
	if err != nil {
		return // the next resources/list tries again
	}
	var page struct {
		Events []struct {
			ID   int64           `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if json.Unmarshal(raw, &page) != nil {
		return
	}
	for _, e := range page.Events {
		if e.Type == "artifact.stored" {
			s.onEvent(ctx, thread, Event{ID: e.ID, Type: e.Type, Data: e.Data})
		}
	}
	s.mu.Lock()
	s.primed[thread] = true
	s.mu.Unlock()
}

// watch follows a thread's events once per session: every stored artifact
// becomes a listed resource, and subscribers hear of state patches and new
// artifacts.
func (s *Server) watch(thread string) {
	if s.jobs.Memory == nil || thread == "" {
		return
	}
	s.mu.Lock()
	if s.watched[thread] {
		s.mu.Unlock()
		return
	}
	s.watched[thread] = true
	ctx := s.ctx
	s.mu.Unlock()
	s.srv.AddResource(&sdk.Resource{URI: StateURI(thread), Name: "state", Title: "state of thread " + thread, MIMEType: "application/json"}, s.readResource)
	go func() {
		// A stream that breaks (the daemon restarting, or not yet serving when the
		// session made the thread) is followed again from the last event seen, so a
		// subscriber never silently stops hearing of updates.
		var last int64
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			err := s.jobs.Memory.Watch(ctx, thread, last, func(e Event) {
				last = max(last, e.ID)
				s.onEvent(ctx, thread, e)
			})
			if ctx.Err() != nil || err == nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
		}
		s.mu.Lock()
		delete(s.watched, thread) // a later call may watch again
		s.mu.Unlock()
	}()
}

// onEvent lists a stored artifact as a resource and tells subscribers of a
// state patch.
func (s *Server) onEvent(ctx context.Context, thread string, e Event) {
	switch e.Type {
	case "artifact.stored":
		var a struct {
			Artifact
			Capability string `json:"capability"`
		}
		// A search's result list is bookkeeping the agent already has in the call's answer:
		// listed, every search would push what agents stored out of the list and make the
		// host list again. It stays readable through the template.
		if json.Unmarshal(e.Data, &a) != nil || !refRe().MatchString(a.Ref) || a.Capability == memory.SearchCapability {
			return
		}
		uri := ArtifactURI(thread, a.Ref)
		s.mu.Lock()
		if s.known[uri] {
			s.mu.Unlock()
			return
		}
		s.known[uri] = true
		list := append(s.listed[thread], uri)
		var dropped string
		if len(list) > maxListed {
			dropped, list = list[0], list[1:]
			delete(s.known, dropped)
		}
		s.listed[thread] = list
		s.mu.Unlock()
		s.srv.AddResource(&sdk.Resource{URI: uri, Name: a.Ref, Title: a.Name, MIMEType: mimeFor(a.Type), Size: a.Size}, s.readResource)
		if dropped != "" {
			s.srv.RemoveResources(dropped)
		}
	case "state.patched":
		_ = s.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: StateURI(thread)})
	}
}

func mimeFor(typ string) string {
	switch typ {
	case "markdown":
		return "text/markdown"
	case "json":
		return "application/json"
	case "html":
		return "text/html"
	case "binary":
		return "application/octet-stream"
	case "email":
		return "message/rfc822"
	}
	return "text/plain"
}
