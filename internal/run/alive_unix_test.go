//go:build unix

package run

import (
	"os/exec"
	"testing"
)

func TestAliveChild(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	if !Alive(sleeper.Process.Pid) {
		t.Error("a running child: not alive")
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(reaped.Process.Pid) {
		t.Error("a child that exited and was reaped: alive")
	}
}
