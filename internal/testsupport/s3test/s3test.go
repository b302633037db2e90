// Package s3test runs a real S3-compatible server for tests: versitygw (Apache-2.0) serving
// a temporary directory on a loopback port, one server per test, stopped by t.Cleanup and,
// on Linux, killed with the test binary if that dies first.
//
// The binary is found as $RELAY_VERSITYGW, then versitygw on PATH, then
// .cache/versitygw/bin/versitygw in the repository, then relay/versitygw/bin/versitygw in
// the user cache directory (where .ci/run installs it with `go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0`); tests skip with that command when
// it is missing.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/relaydev/relay/internal/run"
	"github.com/relaydev/relay/internal/testsupport"
)

// Test credentials of the root user.
const (
	AccessKey = "relaytestaccess"
	SecretKey = "relaytestsecret-0123456789"
)

// InstallHint is the command that installs the server.
const InstallHint = "GOBIN=$PWD/.cache/versitygw/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Server is a running versitygw.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	Client   *minio.Client
}

// Binary returns the versitygw path or an error naming the install command.
func Binary() (string, error) {
	if p := os.Getenv("RELAY_VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	if root, err := testsupport.FindRepoRoot(); err == nil {
		p := filepath.Join(root, ".cache", "versitygw", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if c, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(c, "relay", "versitygw", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw is not installed; install it with `%s` (.ci/run does)", InstallHint)
}

// Start runs a server for t over a new temporary directory; it skips t when versitygw is
// not installed. It sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the test, so the
// code under test signs its requests the way it would in production.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	s, stop, err := StartIn(bin, t.TempDir())
	if err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(stop)
	return s
}

// StartIn runs versitygw from bin over dir (which it fills), for callers without a
// testing.TB (testscript commands); stop kills it. The caller sets the AWS_* credentials
// of the code under test to AccessKey and SecretKey.
func StartIn(bin, dir string) (s *Server, stop func(), err error) {
	// A free port picked here can be taken before versitygw binds it; try a few.
	for i := range 5 {
		d := filepath.Join(dir, strconv.Itoa(i))
		if err = os.Mkdir(d, 0o700); err != nil {
			return nil, nil, err
		}
		if s, stop, err = start(d, bin); err == nil {
			return s, stop, nil
		}
	}
	return nil, nil, err
}

func start(dir, bin string) (*Server, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logPath := filepath.Join(dir, "versitygw.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "--port", addr, "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	run.KillWithParent(cmd.SysProcAttr)
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that forked the child: keep that
		// thread busy waiting for as long as the server runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	if err := <-started; err != nil {
		logf.Close()
		return nil, nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Secure: false})
	if err != nil {
		stop()
		return nil, nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	delay := 10 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = c.ListBuckets(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return nil, nil, fmt.Errorf("versitygw exited: %s", strings.TrimSpace(string(b)))
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, errors.New("versitygw did not answer within 30s: " + err.Error())
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
	return &Server{Endpoint: "http://" + addr, Client: c}, stop, nil
}

// Bucket creates a bucket and returns the artifacts location s3://name/prefix?endpoint=….
func (s *Server) Bucket(t testing.TB, name, prefix string) string {
	t.Helper()
	loc, err := s.MakeBucket(name, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// MakeBucket is Bucket for callers without a testing.TB.
func (s *Server) MakeBucket(name, prefix string) (string, error) {
	if err := s.Client.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		return "", fmt.Errorf("create bucket %s: %w", name, err)
	}
	return "s3://" + name + "/" + prefix + "?" + url.Values{"endpoint": {s.Endpoint}}.Encode(), nil
}
