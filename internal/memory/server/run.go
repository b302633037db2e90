package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/relayhome"
)

// portTries is how many ports after the preferred one are tried when it is taken.
const portTries = 50

// Info is what a running daemon records in daemon.json so clients can find it.
type Info = relayhome.Info

// RunOptions configure Run.
type RunOptions struct {
	Home  string
	Host  string // default 127.0.0.1
	Port  int    // preferred port; the next free one is used when taken; 0 = any
	Token string
	// NoAuth serves without a token; it is refused unless Host is a loopback address.
	// An empty Token without NoAuth is refused: the daemon never serves open by accident.
	NoAuth   bool
	Version  string
	LogLevel slog.Level
	// Sync is the store's commit durability: "full" (default) or "normal" (memory.Options).
	Sync string
	// Capabilities are the validated capability limits.
	Capabilities CapabilityOptions
	// Mirror turns on the human-readable file mirror under $RELAY_HOME/threads.
	Mirror bool
	// Ready is called once the daemon is serving.
	Ready func(Info)
	// Store is the store URL ("" = SQLite in Home, postgres://… = shared) and Artifacts
	// where artifact bodies go ("" = in the store, s3://… = a bucket); see package backend.
	Store, Artifacts string
	// ArtifactsGC is the grace period of the automatic sweeps of the artifact bucket
	// (0: blobgc.DefaultGrace; negative: none).
	ArtifactsGC time.Duration
}

// ErrAlreadyRunning is returned by Run when another daemon holds the store.
var ErrAlreadyRunning = relayhome.ErrDaemonRunning

// Run runs the daemon in the foreground until ctx is cancelled, then shuts down gracefully.
func Run(ctx context.Context, o RunOptions) error {
	if err := o.Capabilities.Validate(); err != nil {
		return fmt.Errorf("capability options: %w", err)
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	switch {
	case o.NoAuth && !relayhome.IsLoopbackHost(host):
		return fmt.Errorf("refusing to serve without an API token on %s: only a loopback address may run with --no-auth", host)
	case o.NoAuth:
		o.Token = ""
	case o.Token == "":
		return errors.New("refusing to serve without an API token; run relay init (or pass --no-auth on a loopback address)")
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", o.Home, err)
	}
	unlock, err := relayhome.LockDaemon(o.Home)
	if err != nil {
		return err
	}
	defer unlock()

	logf, err := os.OpenFile(filepath.Join(o.Home, relayhome.LogFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: o.LogLevel}))

	ln, port, err := listen(host, o.Port)
	if err != nil {
		log.Error("listen failed", "err", err)
		return err
	}
	defer ln.Close()

	store, err := backend.Open(ctx, backend.Config{Home: o.Home, URL: o.Store, Artifacts: o.Artifacts, Sync: o.Sync, Mirror: o.Mirror})
	if err != nil {
		log.Error("open store failed", "err", err)
		return err
	}
	defer store.Close()

	s := New(Options{Store: store, Token: o.Token, Logger: log, Version: o.Version, Home: o.Home, Capabilities: o.Capabilities})
	info := Info{PID: os.Getpid(), URL: "http://" + net.JoinHostPort(host, strconv.Itoa(port)), Port: port,
		Version: s.version, StartedAt: s.started.UTC().Truncate(time.Millisecond)}
	s.url = info.URL
	if err := relayhome.WriteInfo(o.Home, info); err != nil {
		return fmt.Errorf("publish the daemon's address: %w", err)
	}
	defer relayhome.RemoveInfo(o.Home, info.PID)

	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	srv.RegisterOnShutdown(s.Close)
	if o.ArtifactsGC >= 0 {
		go s.sweepBucket(o.ArtifactsGC)
	}
	// Stopped before the store closes (deferred above, so run after this).
	idleCtx, stopIdle := context.WithCancel(ctx)
	idleDone := make(chan struct{})
	s.idle.touch() // start-up counts as activity: a daemon no one calls still releases once
	go func() { defer close(idleDone); s.idle.run(idleCtx, releaseAfter, s.releaseMemory) }()
	defer func() { stopIdle(); <-idleDone }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ownsProcess() {
		dropCode(log, "start-up") // ran every package's init: code the daemon will not run again
	}
	log.Info("daemon started", "url", info.URL, "pid", info.PID, "version", info.Version, "store", store.Describe().Backend+" "+store.Describe().Location, "auth", o.Token != "")
	if o.Ready != nil {
		o.Ready(info)
	}

	select {
	case err := <-errc:
		log.Error("server stopped", "err", err)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("daemon stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err != nil {
		log.Warn("graceful shutdown timed out; closing connections", "err", err)
		srv.Close()
	}
	if cerr := store.Close(); cerr != nil {
		log.Error("close store failed", "err", cerr)
		return cerr
	}
	log.Info("daemon stopped")
	return nil
}

// listen binds host:port, moving to the next port while the address is taken.
func listen(host string, port int) (net.Listener, int, error) {
	var last error
	for p := port; p < port+portTries && p <= 65535; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, ln.Addr().(*net.TCPAddr).Port, nil
		}
		last = err
		if !errors.Is(err, syscall.EADDRINUSE) || port == 0 {
			break
		}
	}
	return nil, 0, fmt.Errorf("cannot listen on %s ports %d-%d: %w; pick another with relay up --port N", host, port, port+portTries-1, last)
}

// daemonMemoryLimit is the daemon's soft Go heap limit: past it the collector runs more
// often instead of letting the heap double after each burst of large artifacts. It is
// soft: a bigger live heap is never refused, only collected harder.
const daemonMemoryLimit = 40 << 20

// LimitMemory sets the daemon's soft memory limit unless the user set GOMEMLIMIT. It is
// process-wide, so the daemon's command calls it, not Run (tests run daemons in-process).
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		limitMu.Lock()
		defer limitMu.Unlock()
		debug.SetMemoryLimit(daemonMemoryLimit)
		limitSet = true
	}
}

// ownsProcess reports whether the daemon's command called LimitMemory: the process is the
// daemon's, so process-wide settings (the heap's limit, returning it to the OS) are its to make.
func ownsProcess() bool {
	limitMu.Lock()
	defer limitMu.Unlock()
	return limitSet
}

var (
	limitMu  sync.Mutex
	limitSet bool // LimitMemory set the limit (a user's GOMEMLIMIT is left as it is)
)

// reserveMemory raises the limit LimitMemory set by n bytes of data the daemon keeps for
// good (the token vocabulary, about 5 MB). The limit is headroom for bursts: resident
// tables must not use it up, or the collector runs back to back (with tiktoken-go's 24 MB
// vocabulary loaded, a 40 MiB limit made GC take half the daemon's CPU under 8 concurrent
// writers).
func reserveMemory(n int64) {
	limitMu.Lock()
	defer limitMu.Unlock()
	if limitSet {
		debug.SetMemoryLimit(debug.SetMemoryLimit(-1) + n)
	}
}
