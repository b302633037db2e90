package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relaydev/relay/plugin"
)

// memArtifacts is a stand-in for relay's artifact store.
type memArtifacts map[string][]byte

func (m memArtifacts) PutArtifact(_ context.Context, a plugin.NewArtifact) (string, error) {
	ref := fmt.Sprintf("ref%d", len(m)+1)
	m[ref] = a.Content
	return ref, nil
}

func Example() {
	c := plugin.Capability{
		Name:        "text.upper",
		Description: "Upper-cases a string",
		ArgsSchema:  json.RawMessage(`{"type":"object","required":["input"],"properties":{"input":{"type":"string"}}}`),
		Cacheable:   true,
		CacheTTL:    5 * time.Minute,
	}
	handler := func(ctx context.Context, req *plugin.InvokeRequest) (*plugin.InvokeResult, error) {
		var args struct {
			Input string `json:"input"`
		}
		if err := json.Unmarshal(req.Args, &args); err != nil {
			return nil, err
		}
		out := strings.ToUpper(args.Input)
		ref, err := req.Artifacts.PutArtifact(ctx, plugin.NewArtifact{Name: "upper.txt", Type: "text", Content: []byte(out)})
		if err != nil {
			return nil, err
		}
		return plugin.Result(ref, map[string]any{"length": len(out), "head": plugin.Head(out, 5)})
	}

	store := memArtifacts{}
	res, err := handler(context.Background(), &plugin.InvokeRequest{
		Capability: c.Name, ThreadID: "t1", Args: json.RawMessage(`{"input":"hello relay"}`), Artifacts: store,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.ArtifactRef, string(res.Preview), string(store[res.ArtifactRef]))
	// Output: ref1 {"head":"HELLO","length":11} HELLO RELAY
}

func ExampleHead() {
	fmt.Println(plugin.Head("héllo", 2))
	// Output: h
}
