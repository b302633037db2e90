package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/relaydev/relay/internal/relayhome"

	"github.com/relaydev/relay/internal/memory/sqlite"

	"github.com/relaydev/relay/internal/memory/client"
)

// memoryDoctorChecks are the daemon and store diagnostics.
func memoryDoctorChecks() []doctorCheck {
	return []doctorCheck{
		{Name: "daemon", Run: checkDaemon},
		{Name: "store", Run: checkStore},
	}
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
		return checkResult{Status: statusOK, Detail: fmt.Sprintf("running at %s (pid %d, version %s)", st.URL, st.PID, st.Version)}
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
	home, err := f.Home()
	if err != nil {
		return checkResult{Status: statusFail, Detail: err.Error()}
	}
	err = sqlite.QuickCheck(ctx, home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkResult{Status: statusWarn, Detail: "no store yet at " + home + "/" + relayhome.DBFile, Hint: "relay up (creates it)"}
	case err != nil:
		return checkResult{Status: statusFail, Detail: err.Error(), Hint: "stop the daemon and move the store aside, then relay up; see " + home + "/daemon.log"}
	}
	return checkResult{Status: statusOK, Detail: home + "/" + relayhome.DBFile + " passes quick_check"}
}
