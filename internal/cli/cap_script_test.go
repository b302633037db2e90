package cli

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/relaydev/relay/internal/relayhome"
	"github.com/relaydev/relay/internal/testsupport"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// stdout2env NAME: set $NAME to the last command's trimmed stdout (ids for later steps).
	scriptCmds["stdout2env"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: stdout2env NAME")
		}
		ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
	}
	// fetchserver NAME: serve a small page on 127.0.0.1 for http.fetch; $NAME gets its URL.
	scriptCmds["fetchserver"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: fetchserver NAME")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/redirect-private" {
				http.Redirect(w, r, "http://10.0.0.1/admin", http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body><h1>Fetched page</h1><p>relay fetched this zebra page.</p></body></html>")
		}), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		ts.Defer(func() { srv.Close() })
		ts.Setenv(args[0], "http://"+ln.Addr().String())
	}
	// A script that started daemons (in $RELAY_HOME or other homes under $WORK) must not
	// leave them running when it fails half-way.
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		work := env.WorkDir
		env.Defer(func() {
			_ = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != relayhome.InfoFile {
					return nil
				}
				home := filepath.Dir(p)
				info, err := relayhome.ReadInfo(home)
				if err != nil || info.PID <= 0 {
					return nil
				}
				if pid, _ := relayhome.LockHolder(home); pid == info.PID {
					_ = testsupport.Signal(info.PID, syscall.SIGTERM)
				}
				return nil
			})
		})
		return nil
	})
}
