//go:build !unix

// Split by platform: a child's peak memory is in unix's rusage (maxrss_unix.go).

package main

import "os"

// maxRSS is 0, unknown: the table shows n/a.
func maxRSS(*os.ProcessState) int64 { return 0 }
