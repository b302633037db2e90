//go:build !unix

package safeopen

const (
	nonBlock = 0
	noFollow = 0
)
