// Command dropper calls execpages.Drop and then runs code that reads what the dynamic
// loader relocated (interfaces, reflection, maps, a goroutine): built position-independent,
// it crashed when Drop reset those pages. It prints what Drop released and kept.
package main

import (
	"fmt"
	"os"
	"reflect"

	"github.com/relaydev/relay/internal/execpages"
)

func main() {
	st, err := execpages.Drop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop:", err)
		os.Exit(1)
	}
	var v any = map[string][]int{"a": {1, 2}}
	done := make(chan string)
	go func() { done <- fmt.Sprintf("%v %v", v, reflect.TypeOf(v)) }()
	if got := <-done; got != "map[a:[1 2]] map[string][]int" {
		fmt.Fprintln(os.Stderr, "after drop:", got)
		os.Exit(1)
	}
	fmt.Printf("mappings=%d kept=%d\n", st.Mappings, st.Kept)
}
