package backend

import (
	"os"

	"golang.org/x/sys/unix"
)

// newPromptFile holds the prompt in a memfd: a file in memory with no name in any
// directory, so no other user can open it, nothing is left behind, and no inode is
// created and deleted on disk for every ask (on ext4 that was a millisecond of each).
func newPromptFile(dir, prompt string) (*os.File, error) {
	fd, err := unix.MemfdCreate("relay-prompt", unix.MFD_CLOEXEC)
	if err != nil {
		return newPromptFileIn(dir, prompt)
	}
	return fillPromptFile(os.NewFile(uintptr(fd), "relay-prompt"), prompt)
}
