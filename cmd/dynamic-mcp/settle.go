package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// settle waits, for a command that starts the servers of cfg once
// (status, tools, import --probe), until each has settled: ready, or
// failed with a reason. A server whose first try ran out of its connect
// timeout (a slow start: node or npx on a busy laptop, a package runner
// downloading) is waited for through its next try, twice as long, as
// serve would bring it up; not beyond: the bound a user at a terminal
// is told (on stderr, as soon as the first try timed out: what, and how
// much longer at most) and can stop with Ctrl-C. name is what stderr
// calls a server.
func settle(ctx context.Context, cfg *config.Config, mgr *upstream.Manager, stderr io.Writer, name func(*upstream.Server) string) {
	end := time.Now().Add(cfg.LongestConnect() + cfg.Settings.ListTimeout + 5*time.Second)
	told := map[*upstream.Server]bool{}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		waiting := false
		for _, s := range mgr.Servers() {
			st := s.Status()
			switch {
			case st.State == upstream.StateStarting && s.Config.Startable():
				waiting = true
			case longerTry(cfg, s, st):
				waiting = true
				if told[s] {
					continue
				}
				told[s] = true
				more := retryWait(s.Config.Retry) + st.NextConnect + cfg.Settings.ListTimeout
				end = later(end, time.Now().Add(more))
				fmt.Fprintf(stderr, "note: %s did not answer initialize within %s (connect timeout): waiting for its next try, which waits %s, as serve would (%s at most; Ctrl-C stops)\n",
					name(s), cfg.ConnectTimeoutFor(s.Config), st.NextConnect, more.Round(time.Second))
			}
		}
		if !waiting || time.Now().After(end) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// longerTry reports whether s failed on its first try's connect timeout
// only, and its next try waits longer: the one settle waits for.
func longerTry(cfg *config.Config, s *upstream.Server, st upstream.Status) bool {
	return st.State == upstream.StateFailed && st.TimedOut == 1 && st.NextConnect > cfg.ConnectTimeoutFor(s.Config)
}

// retryWait is the longest wait of a server's schedule before its second
// try (see upstream's schedule: the first of its attempts backs off from
// initial_interval, with 25% jitter; with one attempt, reconnect_interval
// with 10%).
func retryWait(r config.Retry) time.Duration {
	if r.Attempts > 1 {
		return r.InitialInterval * 5 / 4
	}
	return r.ReconnectInterval * 11 / 10
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
