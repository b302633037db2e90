//go:build !linux

// Package lowprio runs background work at a lower CPU priority where the platform can
// lower one thread's.
package lowprio

// Thread is a no-op where a thread's priority cannot be set on its own.
func Thread(nice int) {}
