package transport

import (
	"regexp"
	"strings"
	"sync"
)

// ExitError is how a child ended, with the last lines it wrote to stderr:
// usually the reason, when it ended at start.
//
// Its text leads with the status and the decisive line, so that whoever
// shows only the first line (a group's unavailable reason) shows the
// reason, and then lists every kept line:
//
//	exited (status 1): Error: Cannot find module '/srv/index.js'
//	  node:internal/modules/cjs/loader:1228
//	  ...
type ExitError struct {
	Status string   // "exited (status 1)", "killed by signal killed"
	Stderr []string // the last lines, oldest first; see stderrTailLines
}

func (e *ExitError) Error() string {
	switch len(e.Stderr) {
	case 0:
		return e.Status
	case 1:
		return e.Status + ": " + e.Stderr[0]
	}
	var b strings.Builder
	b.WriteString(e.Status + ": " + e.Decisive())
	for _, line := range e.Stderr {
		b.WriteString("\n  " + line)
	}
	return b.String()
}

// Decisive is the stderr line that most likely says why the child ended:
// the last one that reads like an error and is not a stack frame, else
// the last line. "" when there is none.
func (e *ExitError) Decisive() string {
	for i := len(e.Stderr) - 1; i >= 0; i-- {
		line := e.Stderr[i]
		if errorLine().MatchString(line) && !stackFrame().MatchString(line) {
			return strings.TrimSpace(line)
		}
	}
	if len(e.Stderr) == 0 {
		return ""
	}
	return strings.TrimSpace(e.Stderr[len(e.Stderr)-1])
}

var (
	// errorLine is a line that reads like a reason: Node's "Error: Cannot
	// find module", Python's "ModuleNotFoundError: ...", Go's "panic:",
	// or words such as "missing" and "not found".
	errorLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(error|exception|panic|fatal|cannot|can't|could not|couldn't|unable|not found|no such|denied|refused|missing|invalid|failed)`)
	})
	// stackFrame is a line of a JavaScript or Java stack trace:
	// "    at Module._load (node:internal/modules/cjs/loader:1051:27)".
	stackFrame = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+at \S`) })
)
