// Command tokens measures what an agent loop costs in prompt tokens, counted with the real
// o200k_base tokenizer: re-sending the accumulated context at every step, against relay (the
// state header once, then only what changed since the version the agent last saw, with the
// context behind artifact refs).
//
// The loop: a 4 KB specification is stored; at every step the agent reads its context, then
// stores a ~160-byte finding as an artifact and records a fact about it in the state. A naive
// agent sends the specification plus every finding so far at every step; a relay agent sends
// the header at step 1 and GET …/state/header?since=vN afterwards, through a real daemon
// (in-process, loopback HTTP). Neither side counts the model's own output, which is the same.
//
//	go run ./bench/tokens                 # 10 and 50 steps
//	go run ./bench/tokens -steps 10,50,200 -json
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/memory/sqlite"
	"github.com/relaydev/relay/internal/tokens"
)

// Result is one loop's figures.
type Result struct {
	Steps          int     `json:"steps"`
	ContextStartB  int     `json:"context_start_bytes"`
	ContextEndB    int     `json:"context_end_bytes"`
	NaiveBytes     int     `json:"naive_bytes"`
	NaiveTokens    int     `json:"naive_tokens"`
	RelayBytes     int     `json:"relay_bytes"`
	RelayTokens    int     `json:"relay_tokens"`
	FirstHeader    int     `json:"first_header_tokens"`
	DeltaAvg       float64 `json:"delta_avg_tokens"`
	FullFallbacks  int     `json:"full_fallbacks"`
	Ratio          float64 `json:"ratio"`
	ReadingTokens  int     `json:"relay_reading_new_finding_tokens"`
	ReadingRatio   float64 `json:"ratio_reading_new_finding"`
	FullEveryStep  int     `json:"relay_full_header_every_step_tokens"`
	FullEveryRatio float64 `json:"ratio_full_header_every_step"`
}

func main() {
	stepsFlag := flag.String("steps", "10,50", "comma-separated loop lengths")
	start := flag.Int("start", 4000, "bytes of context at step 1")
	finding := flag.Int("finding", 160, "bytes each step adds")
	asJSON := flag.Bool("json", false, "print JSON")
	refs := flag.Bool("refs", false, "also measure o200k tokens per ref: full, short, and as a header item")
	flag.Parse()
	if *refs {
		if err := refTokens(); err != nil {
			fail(err)
		}
	}
	var out []Result
	for _, s := range strings.Split(*stepsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-steps: %q is not a positive number", s))
		}
		r, err := loop(context.Background(), n, *start, *finding)
		if err != nil {
			fail(err)
		}
		out = append(out, r)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return
	}
	fmt.Println("o200k_base tokens sent to the model over the whole loop")
	fmt.Printf("%6s %10s %12s %12s %8s %14s %14s %12s\n", "steps", "context", "re-send", "relay", "ratio", "first header", "avg delta", "+read new")
	for _, r := range out {
		fmt.Printf("%6d %4.1f-%4.1fKB %12d %12d %7.1fx %14d %14.1f %7d %4.1fx\n", r.Steps, float64(r.ContextStartB)/1000, float64(r.ContextEndB)/1000,
			r.NaiveTokens, r.RelayTokens, r.Ratio, r.FirstHeader, r.DeltaAvg, r.ReadingTokens, r.ReadingRatio)
	}
	for _, r := range out {
		fmt.Printf("%d steps: full header every step instead of deltas: %d tokens (%.1fx); full fallbacks: %d\n", r.Steps, r.FullEveryStep, r.FullEveryRatio, r.FullFallbacks)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "Error:", err)
	os.Exit(1)
}

func loop(ctx context.Context, steps, start, findingLen int) (Result, error) {
	res := Result{Steps: steps}
	home, err := os.MkdirTemp("", "relay-bench-tokens-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(home)
	st, err := sqlite.OpenSQLite(home, sqlite.Options{Sync: "normal"})
	if err != nil {
		return res, err
	}
	defer st.Close()
	srv := httptest.NewServer(server.New(server.Options{Store: st}).Handler())
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	cnt, err := tokens.New(tokens.O200k)
	if err != nil {
		return res, err
	}
	th, err := c.CreateThread(ctx, "agent-loop")
	if err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	spec := prose(rng, start)
	if _, err := c.PutArtifact(ctx, th.ID, client.PutArtifactParams{Name: "spec.md", Type: "markdown", Content: strings.NewReader(spec)}); err != nil {
		return res, err
	}
	contextParts := []string{spec}
	res.ContextStartB = len(spec)
	seen := 0 // the version of the header the relay agent holds
	deltas := 0
	for step := 1; step <= steps; step++ {
		prompt := strings.Join(contextParts, "\n")
		res.NaiveBytes += len(prompt)
		res.NaiveTokens += cnt.CountString(prompt)
		res.ContextEndB = len(prompt)

		full, _, err := c.Header(ctx, th.ID)
		if err != nil {
			return res, err
		}
		res.FullEveryStep += cnt.Count(full)
		var sent []byte
		if seen == 0 {
			sent = full
			res.FirstHeader = cnt.Count(full)
			var h struct {
				Version int `json:"version"`
				V       int `json:"v"`
			}
			if err := json.Unmarshal(full, &h); err != nil {
				return res, err
			}
			seen = max(h.Version, h.V)
		} else {
			d, err := c.HeaderSince(ctx, th.ID, seen)
			if err != nil {
				return res, err
			}
			if d.Delta == nil {
				sent = d.Full
				res.FullFallbacks++
			} else {
				sent = d.Delta
				deltas++
				res.DeltaAvg += float64(cnt.Count(sent))
			}
			seen = d.Version
		}
		res.RelayBytes += len(sent)
		res.RelayTokens += cnt.Count(sent)

		f := fmt.Sprintf("Step %d finding: %s", step, prose(rng, findingLen))
		contextParts = append(contextParts, f)
		if step > 1 {
			// The honest variant: the agent also reads the previous step's finding in full.
			res.ReadingTokens += cnt.CountString(contextParts[len(contextParts)-2])
		}
		if _, err := c.PutArtifact(ctx, th.ID, client.PutArtifactParams{Name: fmt.Sprintf("step-%d.md", step), Type: "markdown", Content: strings.NewReader(f)}); err != nil {
			return res, err
		}
		patch := fmt.Sprintf(`[{"op":"add","path":"/facts/-","value":{"id":"f%d","key":"step%d","value":"ok"}}]`, step, step)
		if _, err := c.Patch(ctx, th.ID, []byte(patch), 0, "agent"); err != nil {
			return res, err
		}
	}
	if deltas > 0 {
		res.DeltaAvg /= float64(deltas)
	}
	res.ReadingTokens += res.RelayTokens
	res.Ratio = float64(res.NaiveTokens) / float64(res.RelayTokens)
	res.ReadingRatio = float64(res.NaiveTokens) / float64(res.ReadingTokens)
	res.FullEveryRatio = float64(res.NaiveTokens) / float64(res.FullEveryStep)
	return res, nil
}

var vocab = strings.Fields(`the a to of and in is for that with on as it be by this are from or at an not
importer zip entry path refuse archive bundle thread state artifact ref hash version event daemon store
token header preview cache search index query result agent capability request response limit check
must should keeps stable exact round trip size link absolute name file user error next step test
review patch apply commit branch config module function returns value list map string number field
parser schema validate reject accept record write read open close lock retry timeout context cancel`)

// prose returns about n bytes of varied pseudo-English, so BPE counts are realistic
// (repeated text would compress into unrealistically few tokens).
func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		w := vocab[rng.IntN(len(vocab))]
		if b.Len() == 0 || rng.IntN(12) == 0 {
			if b.Len() > 0 {
				b.WriteString(". ")
			}
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteString(".")
	return b.String()
}

// refTokens measures what a ref costs a model over 1,000 real refs and their short forms.
func refTokens() error {
	cnt, err := tokens.New(tokens.O200k)
	if err != nil {
		return err
	}
	var full, short, itemFull, itemShort int
	const n = 1000
	now := time.Now()
	for i := 0; i < n; i++ {
		ref := memory.NewRef(now.Add(time.Duration(i) * 37 * time.Millisecond))
		sum := sha256.Sum256([]byte(fmt.Sprint("artifact ", i)))
		s := hex.EncodeToString(sum[:])[:memory.MinShortRef]
		name := fmt.Sprintf("step-%d.md", i)
		full += cnt.CountString(ref)
		short += cnt.CountString(s)
		itemFull += cnt.CountString(fmt.Sprintf(`{"ref":%q,"type":"markdown","name":%q}`, ref, name))
		itemShort += cnt.CountString(fmt.Sprintf(`%q`, s+" "+name))
	}
	fmt.Printf("o200k tokens per ref, mean of %d: full ref %.1f, short ref %.1f; header item before %.1f, after %.1f\n\n",
		n, float64(full)/n, float64(short)/n, float64(itemFull)/n, float64(itemShort)/n)
	return nil
}
