//go:build !unix

package mcphttp

import "time"

// selfCPU is 0 where getrusage is not at hand: the benchmark leaves out
// its proc-cpu-µs/op.
func selfCPU() time.Duration { return 0 }
