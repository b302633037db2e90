package jsonpatch_test

import (
	"fmt"

	"github.com/relaydev/relay/internal/memory/jsonpatch"
)

func ExampleApply() {
	doc := []byte(`{"facts":[{"id":"f1"}],"big":12345678901234567890}`)
	out, err := jsonpatch.Apply(doc, []byte(`[{"op":"add","path":"/facts/-","value":{"id":"f2"}},{"op":"test","path":"/facts/0/id","value":"f1"}]`))
	fmt.Println(string(out), err)

	_, err = jsonpatch.Apply(doc, []byte(`[{"op":"remove","path":"/facts/0/key"}]`))
	fmt.Println(err)
	// Output:
	// {"facts":[{"id":"f1"},{"id":"f2"}],"big":12345678901234567890} <nil>
	// operation 0 (remove): path "/facts/0/key": no member "key"
}

func ExampleDiff() {
	patch, _ := jsonpatch.Diff([]byte(`{"a":[1,2,3],"b":1}`), []byte(`{"a":[1,3],"c":2}`))
	fmt.Println(string(patch))
	// Output:
	// [{"op":"remove","path":"/b"},{"op":"remove","path":"/a/1"},{"op":"add","path":"/c","value":2}]
}

func ExamplePointer_Get() {
	doc, _ := jsonpatch.Decode([]byte(`{"a/b":{"~":[10,20]}}`))
	p, _ := jsonpatch.ParsePointer("/a~1b/~0/1")
	v, _ := p.Get(doc)
	fmt.Println(v)
	// Output: 20
}
