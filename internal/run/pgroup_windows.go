//go:build windows

package run

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no process groups to signal. What a command starts (an npm shim's node, a
// linter's workers) is tied to it with a job object instead: the child is created
// suspended, put in a job of its own, then let run, so nothing it starts escapes the job
// unless it asks to break away (a daemon git starts may). A timeout terminates the job. The
// job kills what is left in it when relay's handle closes, so relay dying ends the command
// as the parent-death signal does on Linux; when a command finishes normally that is
// switched off first, and what it left running stays, as on unix.
//
// The children get no console window: relay pipes their output, and an ask job runs
// detached from any console, where every console program it started would open a window.

var jobs sync.Map // *exec.Cmd → windows.Handle of its job

func setProcessGroup(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW}
	cmd.SysProcAttr = attr
	job, err := newJob()
	if err != nil {
		return // the direct child alone is killed on a timeout, as exec does by default
	}
	attr.CreationFlags |= windows.CREATE_SUSPENDED
	jobs.Store(cmd, job)
	cmd.Cancel = func() error {
		killGroup(cmd)
		return nil
	}
}

// newJob creates a job whose processes may break away when they ask to and are killed
// when its last handle closes.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	if err := setJobLimits(job, windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE|windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

func setJobLimits(job windows.Handle, flags uint32) error {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = flags
	_, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	return err
}

// enterGroup puts the suspended child in its job and lets it run. If the job cannot take
// it (a parent job that allows no nesting), it runs without one; if it cannot be let run,
// it is killed, having run nothing.
func enterGroup(cmd *exec.Cmd) error {
	v, ok := jobs.Load(cmd)
	if !ok {
		return nil
	}
	job := v.(windows.Handle)
	pid := uint32(cmd.Process.Pid)
	if err := assign(job, pid); err != nil {
		jobs.Delete(cmd)
		windows.CloseHandle(job)
	}
	if err := resume(pid); err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return nil
}

func assign(job windows.Handle, pid uint32) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(p)
	return windows.AssignProcessToJobObject(job, p)
}

// resume lets the threads of a process created suspended run (os/exec closes the handle of
// its first thread, so they are found by the process's id).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	e := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &e); err == nil; err = windows.Thread32Next(snap, &e) {
		if e.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, e.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return err
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d to resume", pid)
	}
	return nil
}

// killGroup ends the command's job, or the command alone when it runs without one.
func killGroup(cmd *exec.Cmd) {
	if job, ok := jobs.Load(cmd); ok {
		_ = windows.TerminateJobObject(job.(windows.Handle), 1)
	} else if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// leaveGroup closes the command's job once it has been waited for. What it left running
// was killed already if the command was cancelled or kills its group on exit; otherwise it
// stays, so the job must not kill it on close.
func leaveGroup(cmd *exec.Cmd) {
	v, ok := jobs.LoadAndDelete(cmd)
	if !ok {
		return
	}
	job := v.(windows.Handle)
	_ = setJobLimits(job, windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK)
	windows.CloseHandle(job)
}

func killGroupPID(int) {}

// Detached is the SysProcAttr of a child that must outlive its parent and its console (the
// background daemon, an ask job): without a console of its own to inherit, closing the
// terminal that started it does not end it, and in a process group of its own the
// terminal's Ctrl+C does not reach it.
func Detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS, HideWindow: true}
}
