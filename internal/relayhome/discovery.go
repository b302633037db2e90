package relayhome

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/filelock"
)

// Info is what a running daemon records in daemon.json so clients can find it.
type Info struct {
	PID       int       `json:"pid"`
	URL       string    `json:"url"`
	Port      int       `json:"port"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
}

// ReadInfo reads daemon.json; a missing file is an fs.ErrNotExist error.
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

// WriteInfo publishes a started daemon: daemon.json and daemon.pid, each replaced whole.
func WriteInfo(home string, in Info) error {
	b, _ := json.MarshalIndent(in, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(home, InfoFile), append(b, '\n'), 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(home, PIDFile), []byte(strconv.Itoa(in.PID)+"\n"), 0o600)
}

// RemoveInfo removes daemon.json and daemon.pid if they still describe pid, so a daemon
// that stops never removes the files of one that started after it.
func RemoveInfo(home string, pid int) {
	if cur, err := ReadInfo(home); err == nil && cur.PID == pid {
		os.Remove(filepath.Join(home, InfoFile))
		os.Remove(filepath.Join(home, PIDFile))
	}
}

// ErrDaemonRunning is returned by LockDaemon when another daemon holds the directory.
var ErrDaemonRunning = errors.New("a relay daemon is already running for this RELAY_HOME")

// LockDaemon takes the daemon's exclusive lock on daemon.lock, or returns
// ErrDaemonRunning. The kernel releases it even on kill -9, so a stale pid file never
// blocks a restart.
func LockDaemon(home string) (unlock func(), err error) {
	l, err := filelock.TryLock(filepath.Join(home, LockFile))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, ErrDaemonRunning
	}
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// LockHolder returns the pid of the daemon holding home's lock, 0 when none runs, or -1
// when one holds it but has not said who yet (it is starting).
func LockHolder(home string) (int, error) {
	pid, held, err := filelock.Holder(filepath.Join(home, LockFile))
	if err != nil || !held {
		return 0, err
	}
	if pid == 0 {
		// Held, but the pid is not written yet: the daemon is starting; the pid file says who.
		if in, err := ReadInfo(home); err == nil {
			return in.PID, nil
		}
		return -1, nil
	}
	return pid, nil
}
