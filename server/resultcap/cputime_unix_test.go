//go:build unix

package resultcap

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used: what a busy machine does
// not stretch, as it stretches the time on the clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
