package transport

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// DefaultGrace is each wait of the close ladder unless ProcessSpec.Grace
// says otherwise: close stdin, wait, SIGTERM the process group, wait,
// SIGKILL the process group.
const DefaultGrace = 5 * time.Second

// A child's last stderr lines are kept for the error that says how it
// ended: stderrTailLines of them, fewer when they hold more than
// stderrTailBytes, but never fewer than one. maxStderrLine is how long one
// kept or logged line may be, so at least 20 lines or 4 KiB are kept:
// enough for a Node.js or Python stack trace and the line that matters.
const (
	stderrTailLines = 20
	stderrTailBytes = 8 << 10
	maxStderrLine   = 4096
)

// ProcessSpec says how to start a child.
type ProcessSpec struct {
	Command string
	Args    []string
	// Env is set over the hub's environment, which the child gets without
	// the hub's own DYNAMIC_MCP_* variables and without those that hold
	// one of Hide's values.
	Env  map[string]string
	Hide []string // secrets of the hub's, such as its HTTP token
	Dir  string
	// Grace is each wait of the close ladder; DefaultGrace when 0.
	Grace time.Duration
	// Stderr is what the child's stderr may put in the log, shared by
	// the starts of one server (NewStderrBudget); nil: a budget of the
	// child's own.
	Stderr *StderrBudget
}

// Process is a supervised child: its own process group, stdin and stdout
// for the protocol, stderr line by line into the logger.
type Process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	// spare is a second read end of the child's stdout, which the stream
	// over stdout does not close (see Close); nil where there is none.
	spare  *os.File
	stderr *os.File
	logger *slog.Logger
	grace  time.Duration

	done    chan struct{} // closed when the child has exited and been reaped
	waitErr error         // set before done is closed

	tailMu    sync.Mutex // guards tail and tailBytes
	tail      []string
	tailBytes int

	stderrDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// StartProcess starts spec's command in a new process group.
func StartProcess(spec ProcessSpec, logger *slog.Logger) (*Process, error) {
	cmd := exec.Command(commandPath(spec.Command, spec.Env), spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = childEnv(os.Environ(), spec.Hide, spec.Env)
	setProcessGroup(cmd)

	// Plain pipes handed to the child as files: exec then starts no copying
	// goroutines, and Wait never closes the ends we read.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("start %s: %w", spec.Command, err)
	}
	closeAll(inR, outW, errW)
	spare, err := dupFile(outR)
	if err != nil {
		logger.Debug("no spare read end of the child's stdout: its writes during a stop may fail", "err", err)
	}
	// The ends left are this process's alone (the child has the others,
	// and the pipes are close-on-exec): rawio may write and read them.
	rawio.Own(inW)
	rawio.Own(outR)

	p := &Process{
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		spare:      spare,
		stderr:     errR,
		logger:     logger,
		grace:      cmp.Or(spec.Grace, DefaultGrace),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	live.add(p)
	go p.readStderr(errR, spec.Stderr)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Unread is how many bytes written to the child's stdin it has not read
// yet: more than none long after they were written, it has not begun to
// read (still starting). ok is false where the OS does not tell (Linux
// does), once the pipe is closed, or for a nil p.
func (p *Process) Unread() (n int, ok bool) {
	if p == nil {
		return 0, false
	}
	return unread(p.stdin)
}

// live is every child whose process group may still hold processes.
var live = registry{procs: map[*Process]struct{}{}}

type registry struct {
	mu    sync.Mutex // guards procs
	procs map[*Process]struct{}
}

func (r *registry) add(p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs[p] = struct{}{}
}

func (r *registry) remove(p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.procs, p)
}

// KillAll sends SIGKILL to the process group of every child still running,
// for a hub told to stop at once (a second signal): no ladder, but no
// process left behind either.
func KillAll() {
	live.mu.Lock()
	defer live.mu.Unlock()
	for p := range live.procs {
		signalGroup(p.cmd, sigKill)
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// Stdin is where protocol messages to the child go.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is where the child's protocol messages come from.
func (p *Process) Stdout() io.Reader { return p.stdout }

// Done is closed once the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitError describes how the child ended, with its last stderr lines
// (see ExitError). It is nil while the child runs.
func (p *Process) ExitError() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	<-p.stderrDone // the last lines are in the tail once stderr hits EOF
	status := "exited (status 0)"
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		status = describeExit(ee)
	} else if p.waitErr != nil {
		status = "exited: " + p.waitErr.Error()
	}
	return &ExitError{Status: status, Stderr: p.Tail()}
}

// Tail is the child's last stderr lines, oldest first.
func (p *Process) Tail() []string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return slices.Clone(p.tail)
}

// A child's stderr is logged at most stderrLogBurst units at once, then
// stderrLogRate a second, a line costing one unit per started
// stderrLogUnit bytes (so a burst is 1,000 short lines or about 250 KiB,
// and then 10 short lines or 2.5 KiB a second); the lines past that are
// counted, and the count is logged with a line logged at most every
// stderrLogSaid, and when stderr ends. The budget is the server's, not
// each start's (ProcessSpec.Stderr): a server that writes a burst and
// exits, restarted every second or two, would otherwise log a burst each
// time. Bytes that are not UTF-8 are logged
// as one replacement character a run (JSON would spell each as six bytes).
// A server that floods stderr (a debug switch left on, a loop) would
// otherwise fill the shared hub's log file.
const (
	stderrLogBurst = 1000
	stderrLogRate  = 10
	stderrLogUnit  = 256
	stderrLogSaid  = 10 * time.Second
)

// StderrBudget is what one server's stderr may put in the log, over all
// its starts (see stderrLogBurst).
type StderrBudget struct{ limit *rate.Limiter }

// NewStderrBudget is a full budget, for a server's first start.
func NewStderrBudget() *StderrBudget {
	return &StderrBudget{rate.NewLimiter(stderrLogRate, stderrLogBurst)}
}

func (p *Process) readStderr(r *os.File, budget *StderrBudget) {
	defer close(p.stderrDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	if budget == nil {
		budget = NewStderrBudget()
	}
	limit := budget.limit
	notLogged := 0
	var saidAt time.Time
	say := func(now time.Time) {
		if notLogged > 0 {
			p.logger.Warn(fmt.Sprintf("stderr lines not logged: the server writes more than %d lines (or %d KiB) at once or %d a second (its last lines are kept for the error if it exits)",
				stderrLogBurst, stderrLogBurst*stderrLogUnit>>10, stderrLogRate), "not_logged", notLogged)
			notLogged, saidAt = 0, now
		}
	}
	defer func() { say(time.Now()) }()
	for {
		line, err := readCapped(br, maxStderrLine)
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			if now := time.Now(); limit.AllowN(now, 1+len(line)/stderrLogUnit) {
				if now.Sub(saidAt) >= stderrLogSaid {
					say(now)
				}
				p.logger.Info("stderr", "line", strings.ToValidUTF8(line, "\uFFFD"))
			} else {
				notLogged++
			}
			p.keep(line)
		}
		if err != nil {
			return
		}
	}
}

// keep adds line to the tail, dropping the oldest lines beyond its bounds.
func (p *Process) keep(line string) {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	p.tail = append(p.tail, line)
	p.tailBytes += len(line)
	drop := 0
	for len(p.tail)-drop > stderrTailLines || (p.tailBytes > stderrTailBytes && len(p.tail)-drop > 1) {
		p.tailBytes -= len(p.tail[drop])
		drop++
	}
	if drop > 0 {
		p.tail = slices.Delete(p.tail, 0, drop)
	}
}

// readCapped reads one line, keeping at most max bytes of it and discarding
// the rest, so a child that never writes a newline cannot grow our memory.
func readCapped(br *bufio.Reader, max int) (string, error) {
	var b strings.Builder
	for {
		chunk, err := br.ReadSlice('\n')
		if room := max - b.Len(); room > 0 {
			b.Write(chunk[:min(len(chunk), room)])
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return b.String(), err
	}
}

// Close stops the child by the ladder: close its stdin and wait the grace,
// then SIGTERM its process group and wait again, then SIGKILL the group.
// Whatever is left of the group after the child exits is stopped too, so no
// grandchild outlives the hub. Close is idempotent and returns once the
// child is reaped and its stderr read to the end (or the grace after).
//
// From its start Close reads what the child still writes on stdout, and
// discards it: a stream over Stdout closes its read end when it closes,
// and a child that answers what it read before its stdin ended (a Node.js
// server does) would fail with EPIPE, and print its stack trace on stderr,
// however cleanly it meant to exit. The ladder, not the reading, bounds
// the stop: a child that writes without end is killed as any other.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		drained := p.drain()
		p.stdin.Close()
		if !p.waitFor(p.grace) {
			// The ladder's next step, as the MCP spec's stdio shutdown
			// has it: common (a Node.js server with a timer left), so
			// no warning.
			p.logger.Info("child did not exit after stdin closed, sending SIGTERM", "grace", p.grace)
			signalGroup(p.cmd, sigTerm)
			if !p.waitFor(p.grace) {
				p.logger.Warn("child did not exit after SIGTERM, sending SIGKILL", "grace", p.grace)
				signalGroup(p.cmd, sigKill)
				<-p.done
			}
		}
		p.reapGroup()
		live.remove(p)
		p.stdout.Close()
		if p.spare != nil {
			p.spare.Close() // ends the drain if a writer escaped the group
		}
		<-drained
		if !waitClosed(p.stderrDone, p.grace) {
			// A writer escaped the group: stop reading it. Bounded too:
			// on Windows a close does not end a read of the pipe.
			p.stderr.Close()
			waitClosed(p.stderrDone, p.grace)
		}
		// How the child ended is ExitError's to say; Close reports only
		// a failure to wait for it.
		var ee *exec.ExitError
		if err := p.waitErr; err != nil && !errors.As(err, &ee) {
			p.closeErr = err
		}
	})
	return p.closeErr
}

// drain reads the child's stdout through the spare read end and discards
// it until the child and its group have closed it, or Close closes the
// spare. The channel is closed when it is done.
func (p *Process) drain() <-chan struct{} {
	done := make(chan struct{})
	if p.spare == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, p.spare)
	}()
	return done
}

// reapGroup stops what is left of the child's process group once the child
// itself is gone: grandchildren that a wrapper such as npx left behind.
func (p *Process) reapGroup() {
	if !groupAlive(p.cmd) {
		return
	}
	signalGroup(p.cmd, sigTerm)
	deadline := time.Now().Add(p.grace)
	for groupAlive(p.cmd) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	signalGroup(p.cmd, sigKill)
}

func (p *Process) waitFor(d time.Duration) bool { return waitClosed(p.done, d) }

// waitClosed reports whether ch was closed within d.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
