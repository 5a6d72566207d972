//go:build unix

package pgstore

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// A server that stops answering in the middle of a statement (its backend
// frozen: the socket stays open, so no keepalive notices) costs the caller
// its deadline, not more: the statement fails then, the connection is
// closed, never idle again, the slot is given back, and the next
// statement runs on a new connection.
func TestPoolDeadServerMidStatement(t *testing.T) {
	s := open(t, pgtest.Start(t)+"&pool_max_conns=1")
	ctx := t.Context()
	var pid int
	if err := s.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Skip(err) // another user's server
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	cut, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err := s.Get(cut, "ns", "k") // the one idle connection, to the frozen backend
	cancel()
	if took := time.Since(start); err == nil || took > 10*time.Second {
		t.Fatalf("a statement to a frozen server: %v after %s", err, took)
	}
	if len(s.pool.slots) != 0 || s.idle() != 0 {
		t.Fatalf("%d slots taken, %d idle: the frozen connection was kept", len(s.pool.slots), s.idle())
	}
	if err := s.Put(ctx, "ns", "k", []byte("v")); err != nil {
		t.Fatalf("the next statement: %v", err)
	}
}
