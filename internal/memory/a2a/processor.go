package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/relaydev/relay/internal/memory"
)

// Handler executes an accepted envelope and returns the response payload.
type Handler func(ctx context.Context, e *Envelope) (json.RawMessage, error)

// Processor validates, deduplicates, counts hops and runs envelopes.
type Processor struct {
	db     memory.HopLedger
	limits Limits
	handle Handler
	// ThreadExists, when set, refuses envelopes for unknown threads before any hop is counted.
	ThreadExists func(ctx context.Context, threadID string) error
	now          func() time.Time

	mu      sync.Mutex
	flights map[string]chan struct{}
}

// NewProcessor returns a processor keeping hop counts and idempotency keys in db.
func NewProcessor(db memory.HopLedger, limits Limits, h Handler) *Processor {
	return &Processor{db: db, limits: limits.withDefaults(), handle: h, now: time.Now, flights: map[string]chan struct{}{}}
}

// Result is the answer to one envelope.
type Result struct {
	Response *Envelope `json:"response"`
	// Replayed is true when the idempotency key was seen before and the first response is returned.
	Replayed bool `json:"replayed"`
	Hops     int  `json:"hops"`
}

// Process handles one raw envelope.
func (p *Processor) Process(ctx context.Context, raw []byte) (*Result, error) {
	e, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	return p.ProcessEnvelope(ctx, e)
}

// ProcessEnvelope handles a decoded envelope.
func (p *Processor) ProcessEnvelope(ctx context.Context, e *Envelope) (*Result, error) {
	if err := Validate(e, p.limits, p.now()); err != nil {
		return nil, err
	}
	if p.ThreadExists != nil {
		if err := p.ThreadExists(ctx, e.ThreadID); err != nil {
			if memory.IsNotFound(err) {
				return nil, &RuleError{Rule: RuleThreadMissing, Detail: err.Error(), Status: 404}
			}
			return nil, err
		}
	}
	if e.IdempotencyKey == "" {
		hops, err := p.claim(ctx, e, false)
		if err != nil {
			return nil, err
		}
		return p.execute(ctx, e, hops)
	}
	fk := e.ThreadID + "\x00" + e.IdempotencyKey
	for {
		p.mu.Lock()
		if ch, busy := p.flights[fk]; busy {
			p.mu.Unlock()
			select {
			case <-ch:
				continue // the first one finished: its stored response is replayed below
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		p.flights[fk] = ch
		p.mu.Unlock()
		res, err := p.once(ctx, e)
		p.mu.Lock()
		delete(p.flights, fk)
		p.mu.Unlock()
		close(ch)
		return res, err
	}
}

func (p *Processor) once(ctx context.Context, e *Envelope) (*Result, error) {
	if prev, hops, err := p.stored(ctx, e); err != nil || prev != nil {
		if prev != nil {
			return &Result{Response: prev, Replayed: true, Hops: hops}, nil
		}
		return nil, err
	}
	hops, err := p.claim(ctx, e, true)
	if err != nil {
		return nil, err
	}
	res, err := p.execute(ctx, e, hops)
	if err != nil {
		// Forget the claim so a retry with the same key runs again; the hop stays counted.
		_ = p.db.ReleaseIdempotent(context.WithoutCancel(ctx), e.ThreadID, e.IdempotencyKey)
		return nil, err
	}
	b, _ := json.Marshal(res.Response)
	if err := p.db.FinishIdempotent(context.WithoutCancel(ctx), e.ThreadID, e.IdempotencyKey, b); err != nil {
		return nil, fmt.Errorf("record idempotent response: %w", err)
	}
	return res, nil
}

// stored returns the first response for the envelope's idempotency key, if it finished.
func (p *Processor) stored(ctx context.Context, e *Envelope) (*Envelope, int, error) {
	resp, err := p.db.IdempotentResponse(ctx, e.ThreadID, e.IdempotencyKey)
	if err != nil || resp == nil {
		// A pending key with no flight in this process was left by a crash: run again.
		return nil, 0, err
	}
	var out Envelope
	if err := json.Unmarshal(resp, &out); err != nil {
		return nil, 0, fmt.Errorf("decode stored response: %w", err)
	}
	hops, err := p.Hops(ctx, e.ThreadID)
	return &out, hops, err
}

// claim counts a hop (refusing past the limit) and, with idem, records the key as pending;
// both in one transaction so concurrent senders cannot overshoot the limit.
func (p *Processor) claim(ctx context.Context, e *Envelope, idem bool) (int, error) {
	key := ""
	if idem {
		key = e.IdempotencyKey
	}
	hops, err := p.db.ClaimHop(ctx, e.ThreadID, p.limits.MaxHops, key, e.MsgID, p.now())
	if errors.Is(err, memory.ErrHopLimit) {
		return 0, &RuleError{Rule: RuleHopLimit, Status: 429, Detail: fmt.Sprintf(
			"thread %s already has %d hops, the limit is %d; an agent loop is likely; start a new thread or raise RELAY_A2A_MAX_HOPS", e.ThreadID, p.limits.MaxHops, p.limits.MaxHops)}
	}
	return hops, err
}

func (p *Processor) execute(ctx context.Context, e *Envelope, hops int) (*Result, error) {
	payload, err := p.handle(ctx, e)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	resp := &Envelope{
		MsgID: uuid.NewString(), ThreadID: e.ThreadID, From: "relay", Type: "response", Schema: SchemaID,
		Payload: payload, IdempotencyKey: e.IdempotencyKey, Timestamp: p.now().UTC().Format(time.RFC3339Nano), InReplyTo: e.MsgID,
	}
	return &Result{Response: resp, Hops: hops}, nil
}

// Hops returns the thread's hop count.
func (p *Processor) Hops(ctx context.Context, threadID string) (int, error) {
	return p.db.Hops(ctx, threadID)
}
