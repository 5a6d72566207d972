package jsonrpc

import "fmt"

// hold counts a request of n bytes, just read, against the connection's
// budget of bytes in flight (MaxInflightBytes), then against those of
// Admit; unhold(w, more) gives them back once the request is answered.
// Over any budget the request is refused at once, never waited for: the
// reader goes on, and other connections are not held up.
func (c *Conn) hold(n int64) (w int64, more func(), refuse *Error) {
	w = min(n, c.opts.MaxInflightBytes) // a lone request larger than the budget is taken
	if !c.held.TryAcquire(w) {
		return 0, nil, Errorf(CodeServerBusy, fmt.Sprintf("too many bytes in flight: this connection's requests being answered hold most of its %s budget, and this one is %s; try again when some are answered",
			ByteSize(c.opts.MaxInflightBytes), ByteSize(n)))
	}
	if c.opts.Admit == nil {
		return w, nil, nil
	}
	more, refuse = c.admit(n)
	if refuse != nil {
		c.held.Release(w)
		return 0, nil, refuse
	}
	return w, more, nil
}

// unhold gives back what hold took: Admit's bytes (more), then the
// connection's (w).
func (c *Conn) unhold(w int64, more func()) {
	if more != nil {
		more()
	}
	c.held.Release(w)
}

// admit runs Admit: a panic in it refuses the request.
func (c *Conn) admit(n int64) (release func(), refuse *Error) {
	defer func() {
		if v := recover(); v != nil {
			c.panicked("", v, nil)
			release, refuse = nil, Errorf(CodeInternalError, "internal error")
		}
	}()
	return c.opts.Admit(n)
}

// ByteSize is n bytes as a person reads it: 512 B, 64 KiB, 8.5 MiB.
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
