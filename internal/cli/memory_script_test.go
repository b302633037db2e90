package cli

import (
	"regexp"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// stdoutre2env NAME REGEXP: set $NAME to the first group of REGEXP in the last stdout.
	scriptCmds["stdoutre2env"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: stdoutre2env NAME REGEXP")
		}
		m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
		if len(m) < 2 {
			ts.Fatalf("no match for %s in stdout", args[1])
		}
		ts.Setenv(args[0], m[1])
	}
}
