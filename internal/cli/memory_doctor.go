package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/relaydev/relay/internal/memory/backend"
	"github.com/relaydev/relay/internal/memory/blob"
	"github.com/relaydev/relay/internal/memory/client"
	"github.com/relaydev/relay/internal/relayhome"
)

// memoryDoctorChecks are the daemon and store diagnostics.
func memoryDoctorChecks() []doctorCheck {
	return []doctorCheck{
		{Name: "token", Run: checkToken},
		{Name: "daemon", Run: checkDaemon},
		{Name: "store", Run: checkStore},
		{Name: "bucket", Run: checkBucket},
	}
}

// storeSetting is the store and artifact locations relay up would use without flags:
// RELAY_STORE / RELAY_ARTIFACTS, else config.json's store.
func storeSetting(f *Factory) (home, storeURL, artifacts string, err error) {
	if home, err = f.Home(); err != nil {
		return "", "", "", err
	}
	u, err := relayhome.LoadUser(home)
	if err != nil {
		return home, "", "", err
	}
	storeURL, artifacts = f.Getenv("RELAY_STORE"), f.Getenv("RELAY_ARTIFACTS")
	if storeURL == "" {
		storeURL = u.Store.URL
	}
	if artifacts == "" {
		artifacts = u.Store.Artifacts
	}
	return home, storeURL, artifacts, nil
}

// checkToken: the API token exists and other local users cannot read it.
func checkToken(ctx context.Context, f *Factory) checkResult {
	home, err := f.Home()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	path := relayhome.UserFile(home)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkResult{Status: statusWarn, Detail: "no API token yet (" + path + ")", Hint: "relay init (or relay up creates it)"}
	}
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s is mode %04o: other users on this machine can read the API token", path, perm), Hint: "chmod 600 " + path}
	}
	if dfi, err := os.Stat(home); err == nil && dfi.Mode().Perm()&0o022 != 0 {
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s is mode %04o: other users can replace files in the relay store", home, dfi.Mode().Perm()), Hint: "chmod 700 " + home}
	}
	u, err := relayhome.LoadUser(home)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix " + path + " or delete it and run relay init"}
	}
	if u.Token == "" {
		return checkResult{Status: statusWarn, Detail: path + " has no token", Hint: "relay up (adds one)"}
	}
	return checkResult{Status: statusOK, Detail: path + " holds the API token (mode 0600)"}
}

func checkDaemon(ctx context.Context, f *Factory) checkResult {
	home, err := f.Home()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	pid, _ := relayhome.LockHolder(home)
	c, err := memoryClient(f)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "relay init"}
	}
	c.HTTP = shortHTTP()
	st, err := c.Status(ctx)
	switch {
	case err == nil && pid == 0 && f.Getenv("RELAY_URL") == "":
		// No daemon holds this store, so whatever answers at the port is someone else's.
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("not running for %s; another daemon (pid %d) answers at %s", home, st.PID, c.BaseURL), Hint: "relay up (it takes the next free port)"}
	case err == nil:
		if st.MirrorError != "" {
			return checkResult{Status: statusWarn, Detail: fmt.Sprintf("running at %s (pid %d) but the file mirror failed: %s", st.URL, st.PID, st.MirrorError), Hint: "check free space and permissions of " + home}
		}
		if !st.Auth {
			return checkResult{Status: statusFail, Detail: fmt.Sprintf("running at %s (pid %d) without an API token (--no-auth): any process or user on this machine can read and change your memory", st.URL, st.PID),
				Hint: "relay down && relay up (without --no-auth; the token is in " + home + "/config.json)"}
		}
		return checkResult{Status: statusOK, Detail: fmt.Sprintf("running at %s (pid %d, version %s, token required)", st.URL, st.PID, st.Version)}
	case pid != 0:
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("pid %d holds the store but does not answer at %s: %v", pid, c.BaseURL, err), Hint: "relay down && relay up; see " + home + "/daemon.log"}
	default:
		var ue *client.UnreachableError
		if !errors.As(err, &ue) {
			// No daemon holds this store, so whatever answers at the port is
			// someone else's (another RELAY_HOME or another program).
			return checkResult{Status: statusWarn, Detail: fmt.Sprintf("not running for %s; another process answers at %s (%v)", home, c.BaseURL, err), Hint: "relay up (it takes the next free port)"}
		}
		return checkResult{Status: statusWarn, Detail: "not running (needed by thread, state and artifact commands)", Hint: "relay up"}
	}
}

func checkStore(ctx context.Context, f *Factory) checkResult {
	home, storeURL, _, err := storeSetting(f)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "relay init"}
	}
	kind, err := backend.Kind(storeURL)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix RELAY_STORE or store.url in " + relayhome.UserFile(home)}
	}
	if kind == "postgres" {
		return checkPostgres(ctx, storeURL)
	}
	if home, err = backend.SQLiteHome(home, storeURL); err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix RELAY_STORE or store.url in " + relayhome.UserFile(home)}
	}
	err = backend.QuickCheck(ctx, home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkResult{Status: statusWarn, Detail: "no store yet at " + home + "/" + relayhome.DBFile, Hint: "relay up (creates it)"}
	case err != nil:
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "stop the daemon and move the store aside, then relay up; see " + home + "/daemon.log"}
	}
	return checkResult{Status: statusOK, Detail: home + "/" + relayhome.DBFile + " passes quick_check"}
}

func checkPostgres(ctx context.Context, storeURL string) checkResult {
	where := blob.Redact(storeURL)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, want, err := backend.ProbePostgres(ctx, storeURL)
	switch {
	case err != nil && v == 0 && strings.Contains(err.Error(), "no relay schema"):
		return checkResult{Status: statusWarn, Detail: where + ": reachable, no relay schema yet", Hint: "relay up --store … (creates it)"}
	case err != nil:
		return checkResult{Status: statusFail, Detail: where + ": " + err.Error(), Hint: "check the server, the role's password (PGPASSWORD or the URL) and its privileges on the database"}
	case v < want:
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s: schema version %d, this relay writes %d", where, v, want), Hint: "restart a daemon with this relay to migrate it"}
	case v > want:
		return checkResult{Status: statusFail, Detail: fmt.Sprintf("%s: schema version %d is newer than this relay (%d)", where, v, want), Hint: "upgrade relay on this machine"}
	}
	return checkResult{Status: statusOK, Detail: fmt.Sprintf("%s: PostgreSQL reachable, schema version %d, write/read round trip ok", where, v)}
}

func checkBucket(ctx context.Context, f *Factory) checkResult {
	home, _, artifacts, err := storeSetting(f)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "relay init"}
	}
	if artifacts == "" {
		return checkResult{Status: statusOK, Detail: "not configured; artifact bodies are kept in the store"}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	bs, err := blob.Open(ctx, artifacts)
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "fix RELAY_ARTIFACTS or store.artifacts in " + relayhome.UserFile(home)}
	}
	if err := blob.Probe(ctx, bs); err != nil {
		return checkResult{Status: statusFail, Detail: bs.String() + ": " + err.Error(), Hint: "check the endpoint, the bucket and AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"}
	}
	res := checkResult{Status: statusOK, Detail: bs.String() + ": reachable, write/read/delete round trip ok"}
	// Orphans: counted by the daemon, which knows every artifact of its store.
	c, err := memoryClient(f)
	if err != nil {
		return res
	}
	c.HTTP = &http.Client{Timeout: 20 * time.Second}
	rep, err := c.SweepBucket(ctx, true, -1)
	switch {
	case err != nil:
		res.Detail += "; unreferenced bodies not counted (" + err.Error() + ")"
	case len(rep.OtherStores) > 0:
		return checkResult{Status: statusWarn, Detail: fmt.Sprintf("%s; %d other relay store(s) keep bodies in the same location, so its unreferenced bodies (%d, %s) are never swept",
			res.Detail, len(rep.OtherStores), rep.Orphans, humanBytes(rep.OrphanBytes)), Hint: "give each store its own prefix (s3://bucket/PREFIX), or remove the marker of a store that is gone under stores/"}
	case rep.Orphans > rep.Young:
		res.Detail += fmt.Sprintf("; %d unreferenced bodies (%s), %d past the %s grace period", rep.Orphans, humanBytes(rep.OrphanBytes), rep.Orphans-rep.Young, rep.Grace)
		res.Hint = "relay artifact gc (the daemon also sweeps every 6 hours)"
	default:
		res.Detail += fmt.Sprintf("; %d unreferenced bodies (%s), all younger than %s", rep.Orphans, humanBytes(rep.OrphanBytes), rep.Grace)
	}
	return res
}
