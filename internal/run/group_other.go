//go:build !linux

package run

// identify knows only the group id where start identities cannot be read.
func identify(pid int) (Group, error) { return Group{PGID: pid}, nil }

// KillGroup does nothing where relay cannot prove a group is still its own.
func KillGroup(g Group) error { return nil }

// exited cannot tell where /proc shows no process state: a process signal 0 finds runs.
func exited(int) bool { return false }
