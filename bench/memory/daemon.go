package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/relaydev/relay/bench/internal/proc"
	"github.com/relaydev/relay/internal/memory/server"
	"github.com/relaydev/relay/internal/relayhome"
)

// daemon is the store under test: a relay daemon this bench started (a child process, or
// in-process with -inprocess) or any daemon already listening at -url.
type daemon struct {
	url  string
	pid  int    // 0: unknown (external daemon without -pid)
	home string // "": unknown (external daemon without -home)
	stop func() error
}

func startDaemon(cfg *config, home string) (*daemon, error) {
	if cfg.url != "" {
		return &daemon{url: strings.TrimRight(cfg.url, "/"), pid: cfg.pid, home: cfg.home, stop: func() error { return nil }}, nil
	}
	if cfg.inprocess {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan relayhome.Info, 1)
		done := make(chan error, 1)
		go func() {
			done <- server.Run(ctx, server.RunOptions{Home: home, Port: 0, NoAuth: true, Version: "bench", Sync: cfg.sync, Ready: func(i relayhome.Info) { ready <- i }})
		}()
		select {
		case info := <-ready:
			return &daemon{url: info.URL, pid: os.Getpid(), home: home, stop: func() error { cancel(); return <-done }}, nil
		case err := <-done:
			cancel()
			return nil, err
		}
	}
	args := []string{"up", "--foreground", "--no-auth"} // loopback only; the bench measures the store, not auth
	if cfg.store != "" {
		args = append(args, "--store", cfg.store)
	}
	cmd := exec.Command(cfg.relay, args...)
	cmd.Env = append(os.Environ(), "RELAY_HOME="+home, "RELAY_DB_SYNC="+cfg.sync)
	logf, err := os.Create(home + ".log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.relay, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return errors.New("the daemon did not stop within 30s of SIGTERM; killed")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(home + ".log")
			return nil, fmt.Errorf("the daemon exited at start (%v): %s", err, strings.TrimSpace(string(b)))
		case <-time.After(10 * time.Millisecond):
		}
		info, err := relayhome.ReadInfo(home)
		if err != nil || info.PID != cmd.Process.Pid {
			continue
		}
		resp, err := http.Get(info.URL + "/health")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return &daemon{url: info.URL, pid: cmd.Process.Pid, home: home, stop: stop}, nil
		}
	}
	_ = stop()
	return nil, errors.New("the daemon did not become ready within 30s")
}

// rss returns the daemon's resident set and its peak (VmHWM), in KB; 0 when unknown.
func (d *daemon) rss() (cur, peak float64) {
	if d.pid == 0 {
		return 0, 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			cur = v
		case "VmHWM:":
			peak = v
		}
	}
	return cur, peak
}

// cpu is the daemon's user+system CPU time so far (0 when unknown).
func (d *daemon) cpu() time.Duration { return proc.CPU(d.pid) }

// diskUsage is the space allocated to files under dir (like du), and the part of it
// under dir/sub.
func diskUsage(dir, sub string) (total, inSub int64) {
	subDir := filepath.Join(dir, sub)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		n := allocated(fi)
		total += n
		if strings.HasPrefix(p, subDir+string(filepath.Separator)) {
			inSub += n
		}
		return nil
	})
	return total, inSub
}

// fsyncRate is the disk's own limit for durable commits: 4 KB overwrites of a
// preallocated file, each followed by fdatasync, for dur, in the directory under test.
func fsyncRate(dir string, dur time.Duration) (float64, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < 256; i++ {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	for time.Since(start) < dur {
		buf[0] = byte(n)
		if _, err := f.WriteAt(buf, int64(n%256)*4096); err != nil {
			return 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// fsyncsDuring counts the daemon's fsync and fdatasync calls while fn runs, with strace
// attached to all its threads (-1 when strace is missing or may not attach: ptrace
// restricted). strace slows syscalls, so only counts are taken this way, never times.
func (d *daemon) fsyncsDuring(fn func() error) (int, error) {
	if d.pid == 0 || d.pid == os.Getpid() {
		return -1, fn()
	}
	path, err := exec.LookPath("strace")
	if err != nil {
		return -1, fn()
	}
	out, err := os.CreateTemp("", "relay-bench-strace-")
	if err != nil {
		return -1, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.Command(path, "-f", "-qq", "-c", "-e", "trace=fsync,fdatasync", "-o", out.Name(), "-p", strconv.Itoa(d.pid))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return -1, fn()
	}
	// strace attaches before it traces; wait until every thread of the daemon is attached
	// (TracerPid set), or give up counting after 5 s.
	deadline := time.Now().Add(5 * time.Second)
	for !tracedBy(d.pid, cmd.Process.Pid) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return -1, fn()
		}
		time.Sleep(5 * time.Millisecond)
	}
	ferr := fn()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return -1, ferr
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[len(f)-1] == "fsync" || f[len(f)-1] == "fdatasync") {
			c, _ := strconv.Atoi(f[3])
			n += c
		}
	}
	return n, ferr
}

// tracedBy reports whether every thread of pid is traced by tracer.
func tracedBy(pid, tracer int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/status")
		if err != nil {
			return false
		}
		if !strings.Contains(string(b), "\nTracerPid:\t"+strconv.Itoa(tracer)+"\n") {
			return false
		}
	}
	return true
}
