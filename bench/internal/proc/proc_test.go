package proc

import (
	"os"
	"runtime"
	"testing"
)

func TestCPUOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before := CPU(os.Getpid())
	x := 0
	for i := 0; CPU(os.Getpid()) < before+20e6; i++ { // spin until 20 ms more CPU shows
		x += i
	}
	if CPU(-1) != 0 || CPU(1<<30) != 0 {
		t.Fatal("CPU of no process must be 0")
	}
	_ = x
}
