// Package pgtest runs a throw-away PostgreSQL server for tests: initdb into a temporary
// directory, then the postgres server as a child of the test binary listening only on a
// unix socket in that directory. One server serves a whole test binary; every test gets a
// database of its own.
//
// Debian's postgresql package provides the binaries (under /usr/lib/postgresql/N/bin);
// tests skip with a message when they are missing. initdb and postgres refuse to run as
// root, so when the tests run as root the server runs as the postgres system user that the
// package creates (uid switched by the kernel at exec, no sudo or runuser needed), and, on
// Linux, the server is started with a parent-death signal so it cannot outlive a crashed
// test binary. The server needs unix: elsewhere tests skip as when PostgreSQL is missing.
//
// RELAY_TEST_POSTGRES=postgres://… uses an existing server instead (it must allow CREATE
// DATABASE).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// MinVersion is the oldest PostgreSQL major version relay supports.
const MinVersion = 15

// Server is a running PostgreSQL server.
type Server struct {
	// URL connects as the superuser to the postgres database.
	URL string
	dir string
	cmd *exec.Cmd
	// exited is closed when the server process ends.
	exited chan struct{}
	logf   string

	bin     string  // directory of initdb, postgres and pg_ctl
	cred    *osUser // who the server runs as (nil: this user)
	durable bool    // synchronous_commit on (see Private)
}

// osUser is a system user by uid and gid.
type osUser struct{ uid, gid int }

var (
	mu      sync.Mutex
	shared  *Server
	failure error // a failed start is not retried for every test
	dbSeq   atomic.Int64
)

// Main runs the tests of a package and stops the shared server afterwards; use it as
// `func TestMain(m *testing.M) { pgtest.Main(m) }`. Packages with a TestMain of their
// own call Stop after m.Run instead.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop shuts the shared server down (fast shutdown) and removes its directory.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		shared.stop()
		shared = nil
	}
}

// Bin returns the directory holding initdb and postgres (the newest supported version), or
// an error saying how to install them.
func Bin() (string, error) {
	if err := unsupported(); err != nil {
		return "", err
	}
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			dir := strings.TrimSpace(string(out))
			if ok(dir) {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if majorOf(d) >= MinVersion && ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if d := filepath.Dir(p); ok(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL %d or newer is not installed (no initdb/postgres found); install it with `apt-get install postgresql` (.ci/run does)", MinVersion)
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func ok(dir string) bool {
	for _, b := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// Get returns the test binary's server, starting it on first use, for callers without a
// testing.TB; errNotInstalled tells a missing installation from a failed start.
func Get() (s *Server, notInstalled, err error) {
	if u := os.Getenv("RELAY_TEST_POSTGRES"); u != "" {
		return &Server{URL: u}, nil, nil
	}
	if _, err := Bin(); err != nil {
		return nil, err, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && failure == nil {
		bin, _ := Bin()
		shared, failure = Start(bin)
	}
	return shared, nil, failure
}

// NewDB is New for callers without a testing.TB.
func NewDB() (url string, notInstalled, err error) {
	s, notInstalled, err := Get()
	if s == nil {
		return "", notInstalled, err
	}
	u, err := s.CreateDB(context.Background(), fmt.Sprintf("relay_test_%d_%d", os.Getpid(), dbSeq.Add(1)))
	return u, nil, err
}

// Shared returns the test binary's server, starting it on first use; it skips t when
// PostgreSQL is not installed.
func Shared(t testing.TB) *Server {
	t.Helper()
	if u := os.Getenv("RELAY_TEST_POSTGRES"); u != "" {
		return &Server{URL: u}
	}
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && failure == nil {
		bin, err := Bin()
		if err != nil {
			failure = err
		} else {
			shared, failure = Start(bin)
		}
	}
	if failure != nil {
		if _, err := Bin(); err != nil {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("start PostgreSQL: %v", failure)
	}
	return shared
}

// New returns the URL of a fresh, empty database on the shared server.
func New(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	name := fmt.Sprintf("relay_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	u, err := s.CreateDB(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// CreateDB creates database name and returns its URL.
func (s *Server) CreateDB(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", fmt.Errorf("connect to test PostgreSQL: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create test database %s: %w", name, err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Private starts a server of t's own, stopped by t.Cleanup, for tests that stop and start
// it (Stop, StartAgain) while daemons use it. Unlike the shared server it acknowledges a
// commit only once its WAL is written (synchronous_commit on), so a stop in immediate mode,
// which kills the server like a crash, keeps every commit it acknowledged, as a production
// server does; fsync stays off, because the machine itself does not crash in these tests.
// RELAY_TEST_POSTGRES does not apply: a test must not stop a server it did not start.
func Private(t testing.TB) *Server {
	t.Helper()
	bin, err := Bin()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	s, err := start(bin, true)
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// Start runs initdb and the server from binDir in a new temporary directory.
func Start(binDir string) (*Server, error) { return start(binDir, false) }

func start(binDir string, durable bool) (*Server, error) {
	dir, err := os.MkdirTemp("", "relay-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, cred.uid, cred.gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(binDir, "initdb"), "-D", data, "-U", "relay", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = runAs(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, tail(out))
	}
	s := &Server{dir: dir, logf: filepath.Join(dir, "postgres.log"), bin: binDir, cred: cred, durable: durable}
	s.URL = (&url.URL{Scheme: "postgres", User: url.User("relay"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "sslmode": {"disable"}}.Encode()}).String()
	if err := s.run(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// run starts the server process on the data directory and waits until it accepts
// connections.
func (s *Server) run() error {
	logFile, err := os.OpenFile(s.logf, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if s.cred != nil {
		logFile.Chown(s.cred.uid, s.cred.gid)
	}
	// Tests kill relay daemons, not the machine, so durability to the disk is not under
	// test here; fsync off keeps 2-core CI fast.
	syncCommit := "off"
	if s.durable {
		syncCommit = "on"
	}
	s.exited = make(chan struct{})
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-c", "listen_addresses=", "-c", "unix_socket_directories="+s.dir, "-c", "port=5432",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit="+syncCommit,
		"-c", "max_connections=300", "-c", "shared_buffers=64MB")
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = serverProcAttr(s.cred)
	exited := s.exited
	if err := startLocked(s.cmd, func() { logFile.Close(); close(exited) }); err != nil {
		logFile.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	if err := s.waitReady(60 * time.Second); err != nil {
		s.kill()
		return err
	}
	return nil
}

// Stop stops a Private server with `pg_ctl stop -m mode` and waits until it has exited:
// "fast" disconnects every client and rolls back their open transactions, "immediate"
// kills the server processes like a crash (the next start replays the WAL). Stop and then
// StartAgain is `pg_ctl restart -m mode`, with room in between to observe the clients
// while no server answers; the server stays a child of the test binary, so it cannot
// outlive it.
func (s *Server) Stop(mode string) error {
	if s.cmd == nil {
		return errors.New("pgtest: Stop needs a server this test binary started (Private)")
	}
	ctl := exec.Command(filepath.Join(s.bin, "pg_ctl"), "stop", "-D", filepath.Join(s.dir, "data"), "-m", mode, "-w", "-t", "60")
	ctl.Dir = s.dir
	ctl.SysProcAttr = runAs(s.cred)
	if out, err := ctl.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %v: %s", mode, err, tail(out))
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(60 * time.Second):
		return errors.New("pgtest: postgres did not exit after pg_ctl stop")
	}
}

// StartAgain starts a server stopped by Stop on the same data directory and socket and
// waits until it accepts connections.
func (s *Server) StartAgain() error {
	select {
	case <-s.exited:
	default:
		return errors.New("pgtest: StartAgain needs a stopped server")
	}
	return s.run()
}

// waitReady connects until the server accepts connections, it exits, or the deadline.
func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	delay := 10 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, s.URL)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		select {
		case <-s.exited:
			b, _ := os.ReadFile(s.logf)
			return fmt.Errorf("postgres exited during start-up: %s", tail(b))
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.logf)
			return fmt.Errorf("postgres did not accept connections within %s: %v; log: %s", limit, err, tail(b))
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func (s *Server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown: disconnect clients, stop cleanly
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				s.kill()
			}
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// kill ends the server process and waits for it.
func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// startLocked starts cmd from a goroutine locked to its OS thread and waits for it there,
// then runs done. The kernel sends the parent-death signal when the thread that forked the
// child ends, and Go may retire idle threads; a thread kept busy waiting lives exactly as
// long as the child needs it.
func startLocked(cmd *exec.Cmd, done func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		done()
	}()
	return <-started
}

// credential is the postgres system user when running as root (initdb and postgres refuse
// root), nil otherwise.
func credential() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and there is no postgres user to run the test server as (the postgresql package creates it)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &osUser{uid: uid, gid: gid}, nil
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(slices.Clip(lines), "\n")
}
