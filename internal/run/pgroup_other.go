//go:build !unix

package run

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}

func killGroupPID(int) {}
