//go:build !unix

package testsupport

import "time"

// CPUTime is not measured here: benchmarks report 0.
func CPUTime() time.Duration { return 0 }
