package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const tid = "550e8400-e29b-41d4-a716-446655440000"

func good() *Envelope {
	return &Envelope{
		MsgID: "m1", ThreadID: tid, From: "agent-a", ToCapability: "retrieval.search", Type: "request",
		Schema: SchemaID, Payload: json.RawMessage(`{"query":"hello","notes":"short note"}`),
		IdempotencyKey: "k1", Timestamp: now.Add(-10 * time.Second).Format(time.RFC3339), TTL: 300,
	}
}

func TestValidateRules(t *testing.T) {
	if err := Validate(good(), Limits{}, now); err != nil {
		t.Fatalf("good envelope rejected: %v", err)
	}
	big := strings.Repeat("a", 2000)
	tests := []struct {
		name string
		mod  func(e *Envelope)
		rule string
	}{
		{"wrong schema", func(e *Envelope) { e.Schema = "com.other.v1" }, RuleSchema},
		{"missing msg_id", func(e *Envelope) { e.MsgID = "" }, RuleRequired},
		{"missing from", func(e *Envelope) { e.From = "" }, RuleRequired},
		{"thread not uuid", func(e *Envelope) { e.ThreadID = "abc" }, RuleRequired},
		{"request without capability", func(e *Envelope) { e.ToCapability = "" }, RuleRequired},
		{"bad type", func(e *Envelope) { e.Type = "shout" }, RuleType},
		{"bad timestamp", func(e *Envelope) { e.Timestamp = "yesterday" }, RuleTimestamp},
		{"future timestamp", func(e *Envelope) { e.Timestamp = now.Add(time.Hour).Format(time.RFC3339) }, RuleTimestamp},
		{"negative ttl", func(e *Envelope) { e.TTL = -1 }, RuleTTL},
		{"expired ttl", func(e *Envelope) { e.Timestamp = now.Add(-301 * time.Second).Format(time.RFC3339); e.TTL = 300 }, RuleExpired},
		{"payload over 16 KB", func(e *Envelope) {
			parts := make([]string, 10)
			for i := range parts {
				parts[i] = fmt.Sprintf("%q", big)
			}
			e.Payload = json.RawMessage(`{"chunks":[` + strings.Join(parts, ",") + `]}`)
		}, RulePayloadSize},
		{"note over 280 chars", func(e *Envelope) { e.Payload = json.RawMessage(`{"notes":"` + strings.Repeat("é", 281) + `"}`) }, RuleNotes},
		{"note in list over 280", func(e *Envelope) {
			e.Payload = json.RawMessage(`{"x":{"note":["ok","` + strings.Repeat("n", 281) + `"]}}`)
		}, RuleNotes},
		{"big inline content", func(e *Envelope) { e.Payload = json.RawMessage(`{"doc":"` + strings.Repeat("x", 3000) + `"}`) }, RuleInline},
		{"payload not json", func(e *Envelope) { e.Payload = json.RawMessage(`{`) }, RuleBadJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good()
			tt.mod(e)
			err := Validate(e, Limits{}, now)
			var re *RuleError
			if !errors.As(err, &re) || re.Rule != tt.rule {
				t.Fatalf("err = %v, want rule %s", err, tt.rule)
			}
			if !strings.Contains(err.Error(), tt.rule) {
				t.Fatalf("message %q does not name the rule", err)
			}
		})
	}
	// 280 runes exactly and whitespace-padded payloads under the limit pass.
	e := good()
	e.Payload = json.RawMessage(`{"notes":"` + strings.Repeat("é", 280) + `","pad":` + strings.Repeat(" ", 20000) + `1}`)
	if err := Validate(e, Limits{}, now); err != nil {
		t.Fatalf("boundary payload rejected: %v", err)
	}
}

func TestDecodeRules(t *testing.T) {
	var re *RuleError
	if _, err := Decode([]byte(`{"msg_id":"m","colour":"red"}`)); !errors.As(err, &re) || re.Rule != RuleUnknownField {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := Decode([]byte(`{"msg_id":`)); !errors.As(err, &re) || re.Rule != RuleBadJSON {
		t.Fatalf("bad json: %v", err)
	}
}

func newProc(t *testing.T, lim Limits, h Handler) (*Processor, string) {
	t.Helper()
	st, err := sqlite.OpenSQLite(t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	th, err := st.CreateThread(context.Background(), memory.CreateThreadParams{Name: "a2a"})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProcessor(st, lim, h)
	p.now = func() time.Time { return now }
	p.ThreadExists = func(ctx context.Context, id string) error { _, err := st.GetThread(ctx, id); return err }
	return p, th.ID
}

func TestIdempotencyConcurrentDuplicates(t *testing.T) {
	var runs atomic.Int64
	p, thread := newProc(t, Limits{}, func(ctx context.Context, e *Envelope) (json.RawMessage, error) {
		n := runs.Add(1)
		time.Sleep(20 * time.Millisecond)
		return json.RawMessage(fmt.Sprintf(`{"run":%d}`, n)), nil
	})
	var wg sync.WaitGroup
	results := make([]*Result, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := good()
			e.ThreadID = thread
			e.MsgID = fmt.Sprintf("m%d", i)
			r, err := p.ProcessEnvelope(context.Background(), e)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", runs.Load())
	}
	replayed := 0
	for _, r := range results {
		if r == nil {
			t.Fatal("missing result")
		}
		if string(r.Response.Payload) != `{"run":1}` || r.Response.MsgID != results[0].Response.MsgID {
			t.Fatalf("responses differ: %s vs %s", r.Response.Payload, results[0].Response.Payload)
		}
		if r.Replayed {
			replayed++
		}
	}
	if replayed != 19 {
		t.Fatalf("replayed = %d, want 19", replayed)
	}
	if h, _ := p.Hops(context.Background(), thread); h != 1 {
		t.Fatalf("hops = %d, want 1 (duplicates are not hops)", h)
	}
}

func TestFailedRunCanBeRetried(t *testing.T) {
	var runs atomic.Int64
	p, thread := newProc(t, Limits{}, func(ctx context.Context, e *Envelope) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			return nil, errors.New("boom")
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	e := good()
	e.ThreadID = thread
	if _, err := p.ProcessEnvelope(context.Background(), e); err == nil {
		t.Fatal("want error")
	}
	r, err := p.ProcessEnvelope(context.Background(), e)
	if err != nil || r.Replayed || string(r.Response.Payload) != `{"ok":true}` {
		t.Fatalf("retry: %+v %v", r, err)
	}
}

func TestHopLimitAtomic(t *testing.T) {
	var runs atomic.Int64
	p, thread := newProc(t, Limits{MaxHops: 10}, func(ctx context.Context, e *Envelope) (json.RawMessage, error) {
		runs.Add(1)
		return nil, nil
	})
	var wg sync.WaitGroup
	var ok, limited atomic.Int64
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := good()
			e.ThreadID = thread
			e.IdempotencyKey = ""
			e.MsgID = fmt.Sprint(i)
			_, err := p.ProcessEnvelope(context.Background(), e)
			var re *RuleError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &re) && re.Rule == RuleHopLimit && re.Status == 429:
				limited.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || limited.Load() != 20 || runs.Load() != 10 {
		t.Fatalf("ok=%d limited=%d runs=%d, want 10/20/10", ok.Load(), limited.Load(), runs.Load())
	}
}

func TestUnknownThread(t *testing.T) {
	p, _ := newProc(t, Limits{}, func(ctx context.Context, e *Envelope) (json.RawMessage, error) { return nil, nil })
	_, err := p.ProcessEnvelope(context.Background(), good())
	var re *RuleError
	if !errors.As(err, &re) || re.Rule != RuleThreadMissing || re.Status != 404 {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeValidate(f *testing.F) {
	b, _ := json.Marshal(good())
	f.Add(b)
	f.Add([]byte(`{"schema":"com.relay.a2a.envelope.v1","payload":{"notes":["a"]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("Decode error is not a RuleError: %v", err)
			}
			return
		}
		if err := Validate(e, Limits{}, now); err != nil {
			var re *RuleError
			if !errors.As(err, &re) || re.Rule == "" {
				t.Fatalf("Validate error is not a RuleError: %v", err)
			}
		}
	})
}

func TestNewRequest(t *testing.T) {
	e, err := NewRequest(tid, "agent-a", "retrieval.search", map[string]any{"query": "x"}, "k", 60)
	if err != nil || e.Schema != SchemaID || e.MsgID == "" || string(e.Payload) != `{"query":"x"}` {
		t.Fatalf("%+v %v", e, err)
	}
	if _, err := NewRequest(tid, "agent-a", "retrieval.search", map[string]any{"doc": strings.Repeat("x", 5000)}, "", 60); err == nil {
		t.Fatal("big inline content accepted")
	}
}
