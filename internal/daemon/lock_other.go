//go:build !unix

package daemon

// lockHome is a no-op where flock is unavailable; the pid file is the only guard.
func lockHome(path string) (func(), error) { return func() {}, nil }
