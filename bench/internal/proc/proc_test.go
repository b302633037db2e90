package proc

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestCPUOfThisProcess: this process's CPU as /proc counts it grows while a loop keeps it
// busy (by the 10 ms /proc resolves, within 10 s however loaded the machine), and a process
// that does not exist has 0.
func TestCPUOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before := CPU(os.Getpid())
	t0 := time.Now()
	for CPU(os.Getpid())-before < 10*time.Millisecond && time.Since(t0) < 10*time.Second {
	}
	if got := CPU(os.Getpid()) - before; got < 10*time.Millisecond {
		t.Fatalf("CPU grew by %v over %v of a busy loop", got, time.Since(t0).Round(time.Millisecond))
	}
	if CPU(-1) != 0 || CPU(1<<30) != 0 {
		t.Fatal("CPU of no process must be 0")
	}
}
