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
	"strings"
	"sync"
	"time"
)

// DefaultGrace is each wait of the close ladder unless ProcessSpec.Grace
// says otherwise: close stdin, wait, SIGTERM the process group, wait,
// SIGKILL the process group.
const DefaultGrace = 5 * time.Second

// stderrTail is how many of a child's last stderr lines are kept for error
// messages, and maxStderrLine how long one kept or logged line may be.
const (
	stderrTail    = 8
	maxStderrLine = 4096
)

// ProcessSpec says how to start a child.
type ProcessSpec struct {
	Command string
	Args    []string
	Env     map[string]string // added to the hub's environment
	Dir     string
	Grace   time.Duration // each wait of the close ladder; DefaultGrace when 0
}

// Process is a supervised child: its own process group, stdin and stdout
// for the protocol, stderr line by line into the logger.
type Process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	logger *slog.Logger
	grace  time.Duration

	done    chan struct{} // closed when the child has exited and been reaped
	waitErr error         // set before done is closed

	tailMu sync.Mutex // guards tail
	tail   []string

	stderrDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// StartProcess starts spec's command in a new process group.
func StartProcess(spec ProcessSpec, logger *slog.Logger) (*Process, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
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

	p := &Process{
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		logger:     logger,
		grace:      cmp.Or(spec.Grace, DefaultGrace),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	live.add(p)
	go p.readStderr(errR)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
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

// ExitError describes how the child ended, with its last stderr lines:
// "exited (status 1): Error: cannot find module". It is nil while the child
// runs.
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
	if tail := p.Tail(); tail != "" {
		return fmt.Errorf("%s: %s", status, tail)
	}
	return errors.New(status)
}

// Tail is the child's last stderr lines joined by " | ".
func (p *Process) Tail() string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return strings.Join(p.tail, " | ")
}

func (p *Process) readStderr(r *os.File) {
	defer close(p.stderrDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := readCapped(br, maxStderrLine)
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			p.logger.Info("stderr", "line", line)
			p.tailMu.Lock()
			if len(p.tail) == stderrTail {
				copy(p.tail, p.tail[1:])
				p.tail = p.tail[:stderrTail-1]
			}
			p.tail = append(p.tail, line)
			p.tailMu.Unlock()
		}
		if err != nil {
			return
		}
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
// child is reaped.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		if !p.waitFor(p.grace) {
			p.logger.Warn("child did not exit after stdin closed, sending SIGTERM", "grace", p.grace)
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
		// How the child ended is ExitError's to say; Close reports only
		// a failure to wait for it.
		var ee *exec.ExitError
		if err := p.waitErr; err != nil && !errors.As(err, &ee) {
			p.closeErr = err
		}
	})
	return p.closeErr
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

func (p *Process) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}
