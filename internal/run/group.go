package run

import (
	"fmt"
	"strconv"
	"strings"
)

// Group is a process group relay started for a hook, identified well enough
// that a later relay (after a crash) can kill it without ever hitting an
// unrelated process that happens to reuse the number.
type Group struct {
	PGID int
	// Start is the group leader's start time (clock ticks since boot).
	Start uint64
	// Boot is the kernel's boot id: the same pid after a reboot is not ours.
	Boot string
}

// String is the group as it is recorded: "pgid start boot".
func (g Group) String() string { return fmt.Sprintf("%d %d %s", g.PGID, g.Start, g.Boot) }

// ParseGroup reads a recorded group, checking it as untrusted data.
func ParseGroup(s string) (Group, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return Group{}, fmt.Errorf("process group %q is not \"pgid start boot\"", s)
	}
	pgid, err := strconv.Atoi(f[0])
	if err != nil || pgid <= 1 {
		return Group{}, fmt.Errorf("process group id %q is not a pid above 1", f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || start == 0 {
		return Group{}, fmt.Errorf("process start time %q is not a positive number", f[1])
	}
	if len(f[2]) > 64 || strings.Trim(f[2], "0123456789abcdef-") != "" {
		return Group{}, fmt.Errorf("boot id %q is not a boot id", f[2])
	}
	return Group{PGID: pgid, Start: start, Boot: f[2]}, nil
}
