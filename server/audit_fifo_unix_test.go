//go:build unix

package server

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// An audit path that is a named pipe no one reads (a log shipper that is
// not running): the hub does not wait for a reader for good, neither
// starting nor on a reload (which holds the lock every reload and Close
// take); it says why, and a reload keeps the trail where it was.
func TestAuditNamedPipeWithoutReader(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("%s waits for a reader of the audit pipe", what)
		}
	}
	cfg := auditConfig(fifo, config.ModeFlat)
	within("New", func() {
		if _, err := New(cfg, upstream.New(cfg, testLogger()), testLogger()); err == nil || !strings.Contains(err.Error(), "audit trail") {
			t.Errorf("New: %v", err)
		}
	})
	path := filepath.Join(t.TempDir(), "a.jsonl")
	cfg = auditConfig(path, config.ModeFlat)
	h, err := New(cfg, upstream.New(cfg, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	within("a reload", func() { h.SetConfig(auditConfig(fifo, config.ModeFlat)) })
	if got := h.config().AuditPath(); got != fifo {
		t.Errorf("config %s after the reload", got)
	}
	within("Close", func() { h.Close() })

	// With a reader, the pipe is the trail.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg = auditConfig(fifo, config.ModeFlat)
	var log syncBuffer
	h, err = New(cfg, upstream.New(cfg, testLogger()), slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatalf("New with a reader: %v", err)
	}
	defer func() {
		// A pipe has nothing to fsync: closing says nothing of it.
		h.Close()
		if strings.Contains(log.String(), "fsync") {
			t.Errorf("closing a trail on a pipe: %s", log.String())
		}
	}()
	snap := h.acquire()
	err = snap.audit.Write(auditRecord{Method: "tools/call", Tool: "through-the-pipe"})
	snap.audit.Release()
	if err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(5 * time.Second * await.Slow))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || !strings.Contains(line, "through-the-pipe") {
		t.Errorf("read from the pipe: %q %v", line, err)
	}
}
