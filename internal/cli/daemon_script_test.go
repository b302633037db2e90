package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/testsupport"
)

func init() {
	// $FREEPORT is a port free at setup time, so daemon scripts do not fight over 7474.
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		env.Setenv("FREEPORT", strconv.Itoa(port))
		return nil
	})
	scriptCmds["api"] = cmdAPI
	scriptCmds["holdport"] = cmdHoldPort
	scriptCmds["killdaemon"] = cmdKillDaemon
	scriptCmds["sleep"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: sleep DURATION")
		}
		d, err := time.ParseDuration(args[0])
		ts.Check(err)
		time.Sleep(d)
	}
}

// cmdAPI calls the daemon of $RELAY_HOME: api METHOD PATH [BODY|@FILE] [Header:Value...].
// The body goes to stdout and "status: N" to stderr, so scripts check both.
func cmdAPI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: api METHOD PATH [BODY|@FILE] [Header:Value...]")
	}
	home := ts.Getenv("RELAY_HOME")
	c, err := client.FromHome(home, ts.Getenv)
	ts.Check(err)
	var body io.Reader
	rest := args[2:]
	if len(rest) > 0 && !strings.Contains(rest[0], ":") || len(rest) > 0 && strings.HasPrefix(rest[0], "@") || len(rest) > 0 && strings.HasPrefix(rest[0], "[") || len(rest) > 0 && strings.HasPrefix(rest[0], "{") {
		if strings.HasPrefix(rest[0], "@") {
			body = strings.NewReader(ts.ReadFile(rest[0][1:]))
		} else {
			body = strings.NewReader(rest[0])
		}
		rest = rest[1:]
	}
	req, err := http.NewRequestWithContext(context.Background(), args[0], c.BaseURL+args[1], body)
	ts.Check(err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for _, h := range rest {
		k, v, _ := strings.Cut(h, ":")
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(ts.Stdout(), "%s", b)
	fmt.Fprintf(ts.Stderr(), "status: %d\n", resp.StatusCode)
	for _, k := range []string{"ETag", "X-Relay-Version", "X-Relay-Truncated", "Content-Type"} {
		if v := resp.Header.Get(k); v != "" {
			fmt.Fprintf(ts.Stderr(), "%s: %s\n", k, v)
		}
	}
	if ok := resp.StatusCode < 300; ok == neg {
		ts.Fatalf("%s %s: status %d", args[0], args[1], resp.StatusCode)
	}
}

// cmdHoldPort listens on 127.0.0.1:PORT until the script ends: holdport $FREEPORT.
func cmdHoldPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdport PORT")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+args[0])
	ts.Check(err)
	ts.Defer(func() { ln.Close() })
}

// cmdKillDaemon sends SIGKILL to the daemon of $RELAY_HOME and waits for it to die.
func cmdKillDaemon(ts *testscript.TestScript, neg bool, args []string) {
	home := ts.Getenv("RELAY_HOME")
	info, err := relayhome.ReadInfo(home)
	ts.Check(err)
	ts.Check(testsupport.Signal(info.PID, syscall.SIGKILL))
	for i := 0; i < 500; i++ {
		if pid, _ := relayhome.LockHolder(home); pid == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("daemon %d still holds the store", info.PID)
}
