package statedoc_test

import (
	"fmt"
	"time"

	"github.com/relaydev/relay/internal/memory/statedoc"
)

func Example() {
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	doc := statedoc.NewAt("th-1", at)
	doc, err := statedoc.ApplyPatch(doc, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f1","key":"phase","value":"done"}}]`), 2, at)
	fmt.Println(err)
	h, _ := statedoc.Header(doc, statedoc.Metrics{CacheHits: 3})
	fmt.Println(string(h))

	_, err = statedoc.ApplyPatch(doc, []byte(`[{"op":"replace","path":"/facts","value":{}}]`), 3, at)
	fmt.Println(err)
	// Output:
	// <nil>
	// {"t":"th-1","v":2,"facts":[{"id":"f1","key":"phase","value":"done"}],"m":{"hits":3}}
	// state document does not match com.relay.state.v1: /facts: must be an array, got object
}
