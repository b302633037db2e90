package cli

import (
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// filemode FILE MODE: the file's permission bits are exactly MODE (octal).
	scriptCmds["filemode"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: filemode FILE MODE")
		}
		want, err := strconv.ParseUint(args[1], 8, 32)
		ts.Check(err)
		fi, err := os.Stat(ts.MkAbs(args[0]))
		ts.Check(err)
		if got := uint64(fi.Mode().Perm()); (got == want) == neg {
			ts.Fatalf("%s is mode %04o, want %s%04o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
		}
	}
}
