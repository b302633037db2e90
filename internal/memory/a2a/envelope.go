// Package a2a enforces relay's typed agent-to-agent envelope (com.relay.a2a.envelope.v1):
// size and note limits, content-by-reference, ttl, idempotency and the per-thread hop limit.
// Every rejection is a *RuleError naming the rule that was broken.
package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// SchemaID is the only accepted envelope schema.
const SchemaID = "com.relay.a2a.envelope.v1"

// Limits of an envelope.
const (
	DefaultMaxPayloadBytes = 16 << 10
	DefaultMaxNoteRunes    = 280
	DefaultMaxInlineBytes  = 2048 // a string longer than an artifact preview belongs in an artifact
	DefaultMaxHops         = 50
	MaxTTL                 = 24 * 60 * 60
	maxClockSkew           = 5 * time.Minute
	maxIDLen               = 200
)

// Envelope is one agent message.
type Envelope struct {
	MsgID          string          `json:"msg_id"`
	ThreadID       string          `json:"thread_id"`
	From           string          `json:"from"`
	ToCapability   string          `json:"to_capability,omitempty"`
	Type           string          `json:"type"`
	Schema         string          `json:"schema"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Timestamp      string          `json:"timestamp"`
	TTL            int             `json:"ttl,omitempty"`
	InReplyTo      string          `json:"in_reply_to,omitempty"`
}

// Message types.
var Types = []string{"request", "response", "event", "error"}

// Rule names, stable for clients.
const (
	RuleSchema        = "schema"
	RuleRequired      = "required_field"
	RuleType          = "type"
	RulePayloadSize   = "payload_max_16kb"
	RuleNotes         = "notes_max_280_chars"
	RuleInline        = "big_content_must_be_artifact_ref"
	RuleTimestamp     = "timestamp"
	RuleTTL           = "ttl"
	RuleExpired       = "ttl_expired"
	RuleHopLimit      = "hop_limit"
	RuleIdempotency   = "idempotency_key"
	RuleUnknownField  = "unknown_field"
	RuleBadJSON       = "json"
	RuleThreadMissing = "thread_exists"
)

// RuleError is a rejected envelope. Status is the HTTP status to answer with.
type RuleError struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
	Status int    `json:"-"`
}

func (e *RuleError) Error() string { return "envelope rejected by rule " + e.Rule + ": " + e.Detail }

func reject(rule, format string, a ...any) *RuleError {
	return &RuleError{Rule: rule, Detail: fmt.Sprintf(format, a...), Status: 400}
}

// Limits configure validation; zero fields take the defaults.
type Limits struct {
	MaxPayloadBytes int
	MaxNoteRunes    int
	MaxInlineBytes  int
	MaxHops         int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPayloadBytes <= 0 {
		l.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if l.MaxNoteRunes <= 0 {
		l.MaxNoteRunes = DefaultMaxNoteRunes
	}
	if l.MaxInlineBytes <= 0 {
		l.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if l.MaxHops <= 0 {
		l.MaxHops = DefaultMaxHops
	}
	return l
}

// Decode parses an envelope strictly: unknown fields are refused so typos do not pass silently.
func Decode(b []byte) (*Envelope, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var e Envelope
	if err := dec.Decode(&e); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return nil, reject(RuleUnknownField, "%v; allowed: msg_id, thread_id, from, to_capability, type, schema, payload, idempotency_key, timestamp, ttl, in_reply_to", err)
		}
		return nil, reject(RuleBadJSON, "the envelope is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, reject(RuleBadJSON, "trailing data after the envelope")
	}
	return &e, nil
}

// Validate checks every stateless rule. now is the receive time.
func Validate(e *Envelope, lim Limits, now time.Time) error {
	lim = lim.withDefaults()
	if e.Schema != SchemaID {
		return reject(RuleSchema, "schema must be %q, got %q", SchemaID, e.Schema)
	}
	for _, f := range []struct{ name, v string }{{"msg_id", e.MsgID}, {"thread_id", e.ThreadID}, {"from", e.From}, {"type", e.Type}, {"timestamp", e.Timestamp}} {
		if f.v == "" {
			return reject(RuleRequired, "%s is required", f.name)
		}
	}
	for _, f := range []struct{ name, v string }{{"msg_id", e.MsgID}, {"from", e.From}, {"to_capability", e.ToCapability}, {"idempotency_key", e.IdempotencyKey}, {"in_reply_to", e.InReplyTo}} {
		if len(f.v) > maxIDLen || strings.ContainsAny(f.v, "\x00\n\r") {
			return reject(RuleRequired, "%s must be at most %d bytes on one line", f.name, maxIDLen)
		}
	}
	if _, err := uuid.Parse(e.ThreadID); err != nil || len(e.ThreadID) != 36 {
		return reject(RuleRequired, "thread_id %q is not a UUID", e.ThreadID)
	}
	switch e.Type {
	case "request":
		if e.ToCapability == "" {
			return reject(RuleRequired, "to_capability is required for type request")
		}
	case "response", "event", "error":
	default:
		return reject(RuleType, "type must be one of %s, got %q", strings.Join(Types, ", "), e.Type)
	}
	ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return reject(RuleTimestamp, "timestamp must be RFC 3339 (e.g. 2026-01-02T15:04:05Z): %v", err)
	}
	if ts.After(now.Add(maxClockSkew)) {
		return reject(RuleTimestamp, "timestamp %s is more than %s in the future; check the sender's clock", e.Timestamp, maxClockSkew)
	}
	if e.TTL < 0 || e.TTL > MaxTTL {
		return reject(RuleTTL, "ttl must be 0 (no expiry) to %d seconds, got %d", MaxTTL, e.TTL)
	}
	if e.TTL > 0 && now.After(ts.Add(time.Duration(e.TTL)*time.Second)) {
		return reject(RuleExpired, "message expired: sent %s with ttl %ds, received %s", e.Timestamp, e.TTL, now.UTC().Format(time.RFC3339))
	}
	return validatePayload(e.Payload, lim)
}

func validatePayload(p json.RawMessage, lim Limits) error {
	if len(bytes.TrimSpace(p)) == 0 {
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, p); err != nil {
		return reject(RuleBadJSON, "payload is not valid JSON: %v", err)
	}
	// Measured serialized and compacted, so whitespace neither helps nor hurts.
	if compact.Len() > lim.MaxPayloadBytes {
		return reject(RulePayloadSize, "payload is %d bytes serialized, the limit is %d; store large content with `relay artifact put` and send the artifact_ref", compact.Len(), lim.MaxPayloadBytes)
	}
	var v any
	dec := json.NewDecoder(&compact)
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return reject(RuleBadJSON, "payload is not valid JSON: %v", err)
	}
	return walk(v, "", lim)
}

func isNoteKey(k string) bool { return k == "note" || k == "notes" }

func walk(v any, path string, lim Limits) error {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := path + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if isNoteKey(k) {
				if err := checkNotes(c, p, lim); err != nil {
					return err
				}
			}
			if err := walk(c, p, lim); err != nil {
				return err
			}
		}
	case []any:
		for i, c := range x {
			if err := walk(c, fmt.Sprintf("%s/%d", path, i), lim); err != nil {
				return err
			}
		}
	case string:
		if len(x) > lim.MaxInlineBytes {
			return reject(RuleInline, "payload%s is a %d-byte string, inline strings are limited to %d bytes; store it with `relay artifact put` and send {\"artifact_ref\": \"<ref>\"} instead", path, len(x), lim.MaxInlineBytes)
		}
	}
	return nil
}

func checkNotes(v any, path string, lim Limits) error {
	check := func(s, p string) error {
		if n := utf8.RuneCountInString(s); n > lim.MaxNoteRunes {
			return reject(RuleNotes, "payload%s is %d characters, notes are limited to %d", p, n, lim.MaxNoteRunes)
		}
		return nil
	}
	switch x := v.(type) {
	case string:
		return check(x, path)
	case []any:
		for i, c := range x {
			if s, ok := c.(string); ok {
				if err := check(s, fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// NewRequest builds a valid request envelope for Go callers: a fresh msg_id, the idempotency
// key (pass "" for none), the current time and ttl in seconds.
func NewRequest(threadID, from, capability string, payload any, idempotencyKey string, ttl int) (*Envelope, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	e := &Envelope{
		MsgID: uuid.NewString(), ThreadID: threadID, From: from, ToCapability: capability, Type: "request",
		Schema: SchemaID, Payload: b, IdempotencyKey: idempotencyKey, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), TTL: ttl,
	}
	if err := Validate(e, Limits{}, time.Now()); err != nil {
		return nil, err
	}
	return e, nil
}
