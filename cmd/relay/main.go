// Command relay relays prompts between coding agents, applies LLM answers
// to a project as transactions, and runs the agents' memory daemon.
package main

import (
	"os"

	"github.com/relaydev/relay/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
