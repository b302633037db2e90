package run

import (
	"os"
	"testing"
)

func TestAliveSelfAndNoPID(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process: not alive")
	}
	for _, pid := range []int{0, -1} { // to the unix kernel, process groups
		if Alive(pid) {
			t.Errorf("pid %d: alive", pid)
		}
	}
}
