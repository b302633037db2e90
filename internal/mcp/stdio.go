package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrame is the largest JSON-RPC message relay mcp reads on stdio: the
// Go SDK's own default, so relay accepts exactly what the SDK would.
const MaxFrame = sdk.DefaultMaxLineLength

// Stdio is relay's stdio transport: the SDK's newline-delimited JSON-RPC
// (batches and all), with what a host needs from a server it cannot see:
//   - at EOF of In, every request already read is answered before the
//     session ends (`printf "$INIT\n$LIST\n" | relay mcp` gets both replies);
//   - a message over MaxFrame bytes, a line that is not JSON or JSON that is
//     not JSON-RPC gets an error reply, and the session goes on.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// MaxFrame overrides the package's MaxFrame (tests).
	MaxFrame int
}

// Connect implements sdk.Transport.
func (t *Stdio) Connect(ctx context.Context) (sdk.Connection, error) {
	limit := t.MaxFrame
	if limit <= 0 {
		limit = MaxFrame
	}
	w := &lockedWriter{w: t.Out}
	g := &frameGuard{r: bufio.NewReaderSize(t.In, 64<<10), out: w, max: limit}
	// the guard already bounds each line, so the SDK's own cap (which ends the session) is off
	inner, err := (&sdk.IOTransport{Reader: io.NopCloser(g), Writer: w, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: inner, guard: g, out: w, pending: map[jsonrpc.ID]bool{}, closed: make(chan struct{})}, nil
}

// lockedWriter keeps the SDK's messages and the guard's own replies whole:
// each is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// reply writes one JSON-RPC response; id is raw JSON (a number or a string), or nil for null.
func (l *lockedWriter) reply(id json.RawMessage, result any, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if result != nil {
		msg["result"] = result
	} else {
		msg["error"] = map[string]any{"code": code, "message": message}
	}
	b, _ := json.Marshal(msg)
	_, _ = l.Write(append(b, '\n'))
}

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// frameGuard hands the SDK's decoder one whole, valid JSON line at a time. A
// line the decoder would choke on (which ends the SDK's session) is answered
// here instead and dropped.
type frameGuard struct {
	r   *bufio.Reader
	out *lockedWriter
	max int

	line []byte // the line being handed out
	off  int

	errMu sync.Mutex
	err   error // the error In returned; the session ends with it
}

func (g *frameGuard) Read(p []byte) (int, error) {
	for g.off == len(g.line) {
		if err := g.next(); err != nil {
			g.errMu.Lock()
			g.err = err
			g.errMu.Unlock()
			return 0, err
		}
	}
	n := copy(p, g.line[g.off:])
	g.off += n
	return n, nil
}

// failed reports whether In itself failed or ended (as opposed to one bad message).
func (g *frameGuard) failed() bool {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err != nil
}

// next loads the next line worth decoding into g.line.
func (g *frameGuard) next() error {
	for {
		scan, err := g.readLine()
		if err != nil && (!errors.Is(err, io.EOF) || (scan == nil && len(g.line) == 0)) {
			return err
		}
		// a whole line, or the last one without its newline
		msg := bytes.TrimSpace(g.line)
		switch {
		case scan != nil:
			g.tooLarge(scan)
		case len(msg) > g.max:
			s := &frameScan{}
			s.write(msg)
			g.tooLarge(s)
		case len(msg) == 0:
		case !json.Valid(msg):
			// the SDK's decoder stops for good at bad JSON; the peer hears why and may go on
			g.out.reply(nil, nil, codeParseError, "Parse error: a line is not JSON; send one JSON-RPC message per line")
		default:
			g.line = append(g.line[:0], msg...)
			g.line = append(g.line, '\n')
			g.off = 0
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line into g.line, or, once it outgrows the limit, only
// through a frameScan (returned) so that memory stays bounded.
func (g *frameGuard) readLine() (*frameScan, error) {
	g.line, g.off = g.line[:0], 0
	var scan *frameScan
	for {
		chunk, err := g.r.ReadSlice('\n')
		if scan == nil && len(g.line)+len(chunk) > g.max+2 { // +2: a "\r\n" ending is not part of the message
			scan = &frameScan{}
			scan.write(g.line)
			g.line = g.line[:0]
		}
		if scan != nil {
			scan.write(chunk)
		} else {
			g.line = append(g.line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return scan, err
		}
	}
}

// tooLarge answers a message over the limit: a tools/call gets a tool error
// result the model can act on, any other request a JSON-RPC error.
func (g *frameGuard) tooLarge(s *frameScan) {
	id := s.requestID()
	if id == nil {
		return // a notification (or no id to answer): nothing to reply to
	}
	mb := float64(s.n) / (1 << 20)
	msg := fmt.Sprintf("the message is %.1f MiB; relay mcp reads at most %d MiB per message", mb, g.max>>20)
	if g.max < 1<<20 {
		msg = fmt.Sprintf("the message is %d bytes; relay mcp reads at most %d bytes per message", s.n, g.max)
	}
	if s.methodName() == "tools/call" {
		text := "Error: " + msg + "\nTry: send large content in pieces (memory put, then pass its ref), or edit the file with smaller old_string/new_string"
		g.out.reply(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true}, 0, "")
		return
	}
	g.out.reply(id, nil, codeInvalidRequest, "Invalid Request: "+msg)
}

// frameScan finds the top-level "id" and "method" of a message too large to
// keep, one byte at a time in constant memory (no JSON library skips a 30 MB
// string without holding it).
type frameScan struct {
	n        int64 // bytes seen
	depth    int
	inString bool
	escaped  bool
	inValue  bool   // at depth 1, after the colon
	tok      []byte // the depth-1 key or scalar value being read, capped
	over     bool   // tok passed the cap
	key      string
	id       []byte
	method   []byte
}

const scanCap = 256

func (s *frameScan) write(p []byte) {
	s.n += int64(len(p))
	for _, b := range p {
		s.byte(b)
	}
}

func (s *frameScan) byte(b byte) {
	if s.inString {
		s.keep(b)
		switch {
		case s.escaped:
			s.escaped = false
		case b == '\\':
			s.escaped = true
		case b == '"':
			s.inString = false
			if s.depth == 1 && !s.inValue {
				s.key, s.tok = string(s.tok), s.tok[:0]
			}
		}
		return
	}
	switch b {
	case '"':
		s.inString = true
		s.keep(b)
	case '{', '[':
		if s.depth == 1 && s.inValue {
			s.over = true // an object or array is no id or method
		}
		s.depth++
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
		}
		s.depth--
	case ':':
		if s.depth == 1 {
			s.inValue, s.tok, s.over = true, s.tok[:0], false
		}
	case ',':
		if s.depth == 1 {
			s.endValue()
		}
	case ' ', '\t', '\r', '\n':
	default:
		s.keep(b)
	}
}

func (s *frameScan) keep(b byte) {
	if s.depth != 1 {
		return
	}
	if len(s.tok) >= scanCap {
		s.over = true
		return
	}
	s.tok = append(s.tok, b)
}

func (s *frameScan) endValue() {
	if s.inValue && !s.over {
		switch s.key {
		case `"id"`:
			s.id = bytes.Clone(s.tok)
		case `"method"`:
			s.method = bytes.Clone(s.tok)
		}
	}
	s.inValue, s.over, s.tok = false, false, s.tok[:0]
}

// requestID is the message's id when it is a valid JSON-RPC id (a string or a number).
func (s *frameScan) requestID() json.RawMessage {
	if len(s.id) == 0 || !json.Valid(s.id) {
		return nil
	}
	if c := s.id[0]; c == '"' || c == '-' || c >= '0' && c <= '9' {
		return s.id
	}
	return nil
}

func (s *frameScan) methodName() string {
	var m string
	if json.Unmarshal(s.method, &m) != nil {
		return ""
	}
	return m
}

// drainConn is the SDK's connection with two changes: EOF is held back until
// every request read so far has its response, and a message that is JSON but
// not JSON-RPC gets an error reply instead of ending the session.
type drainConn struct {
	sdk.Connection
	guard *frameGuard
	out   *lockedWriter

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	drained chan struct{} // closed when pending empties, while Read waits at EOF

	closeOnce sync.Once
	closed    chan struct{}
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err == nil {
			c.track(msg)
			return msg, nil
		}
		if ctx.Err() != nil || c.guard.failed() || c.isClosed() {
			if errors.Is(err, io.EOF) {
				c.waitDrained(ctx)
			}
			return nil, err
		}
		// the SDK could not make a JSON-RPC message of a valid JSON line
		c.out.reply(nil, nil, codeInvalidRequest, "Invalid Request: "+strings.TrimSpace(err.Error()))
	}
}

func (c *drainConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.pending[req.ID] = true
		return
	}
	if req.Method == "notifications/cancelled" {
		// a cancelled request gets no response: stop waiting for it
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(normalizeID(p.RequestID)); err == nil {
				c.doneLocked(id)
			}
		}
	}
}

// normalizeID turns a JSON number decoded as float64 into the int64 MakeID expects.
func normalizeID(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.doneLocked(resp.ID)
		c.mu.Unlock()
	}
	return err
}

func (c *drainConn) doneLocked(id jsonrpc.ID) {
	delete(c.pending, id)
	if len(c.pending) == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
}

// waitDrained returns once every request read has been answered (or the
// session is cancelled or closed).
func (c *drainConn) waitDrained(ctx context.Context) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	c.drained = ch
	c.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-c.closed:
	}
}

func (c *drainConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
