package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory"
)

// Files the daemon keeps in $RELAY_HOME.
const (
	InfoFile = "daemon.json"
	PIDFile  = "daemon.pid"
	LogFile  = "daemon.log"
	lockFile = "daemon.lock"
)

// portTries is how many ports after the preferred one are tried when it is taken.
const portTries = 50

// Info is what a running daemon records in daemon.json so clients can find it.
type Info struct {
	PID       int         `json:"pid"`
	URL       string      `json:"url"`
	Port      int         `json:"port"`
	Version   string      `json:"version"`
	StartedAt memory.Time `json:"started_at"`
}

// ReadInfo reads $RELAY_HOME/daemon.json; a missing file is an fs.ErrNotExist error.
func ReadInfo(home string) (Info, error) {
	var in Info
	b, err := os.ReadFile(filepath.Join(home, InfoFile))
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("%s is corrupt (%v); remove it and run relay up", filepath.Join(home, InfoFile), err)
	}
	return in, nil
}

// RunOptions configure Run.
type RunOptions struct {
	Home     string
	Host     string // default 127.0.0.1
	Port     int    // preferred port; the next free one is used when taken; 0 = any
	Token    string
	Version  string
	LogLevel slog.Level
	// Sync is the store's commit durability: "full" (default) or "normal" (memory.Options).
	Sync string
	// Ready is called once the daemon is serving.
	Ready func(Info)
}

// ErrAlreadyRunning is returned by Run when another daemon holds the store.
var ErrAlreadyRunning = errors.New("a relay daemon is already running for this RELAY_HOME")

// Run runs the daemon in the foreground until ctx is cancelled, then shuts down gracefully.
func Run(ctx context.Context, o RunOptions) error {
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", o.Home, err)
	}
	unlock, err := lockHome(filepath.Join(o.Home, lockFile))
	if err != nil {
		return err
	}
	defer unlock()

	logf, err := os.OpenFile(filepath.Join(o.Home, LogFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: o.LogLevel}))

	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	ln, port, err := listen(host, o.Port)
	if err != nil {
		log.Error("listen failed", "err", err)
		return err
	}
	defer ln.Close()

	store, err := sqlite.OpenSQLite(o.Home, sqlite.Options{Sync: o.Sync})
	if err != nil {
		log.Error("open store failed", "err", err)
		return err
	}
	defer store.Close()

	s := New(Options{Store: store, Token: o.Token, Logger: log, Version: o.Version, Home: o.Home})
	info := Info{PID: os.Getpid(), URL: "http://" + net.JoinHostPort(host, strconv.Itoa(port)), Port: port,
		Version: s.version, StartedAt: memory.Time{Time: s.started}}
	s.url = info.URL
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := writeFileAtomic(filepath.Join(o.Home, InfoFile), append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", InfoFile, err)
	}
	if err := writeFileAtomic(filepath.Join(o.Home, PIDFile), []byte(strconv.Itoa(info.PID)+"\n")); err != nil {
		return fmt.Errorf("write %s: %w", PIDFile, err)
	}
	defer func() {
		// Only remove files that are still ours.
		if cur, err := ReadInfo(o.Home); err == nil && cur.PID == info.PID {
			os.Remove(filepath.Join(o.Home, InfoFile))
			os.Remove(filepath.Join(o.Home, PIDFile))
		}
	}()

	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	srv.RegisterOnShutdown(s.Close)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("daemon started", "url", info.URL, "pid", info.PID, "version", info.Version, "store", store.Path(), "auth", o.Token != "")
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

// writeFileAtomic writes via a temp file and rename so readers never see half a file.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o600); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
