//go:build !linux

package server

// lowerPriority is a no-op where a thread's priority cannot be set on its own.
func lowerPriority() {}
