//go:build unix

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// audit.path: /dev/stdout with the stdio face, where stdout carries the
// conversation: serving is refused with why, before any audit line goes
// to the client amid its messages; a reload that moves the trail there
// keeps it where it was.
func TestAuditOnStdoutOfStdioRefused(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	go io.Copy(io.Discard, r)
	stdout := fmt.Sprintf("/dev/fd/%d", w.Fd())
	if _, err := os.Stat(stdout); err != nil {
		t.Skipf("no %s: %v", stdout, err)
	}
	// serve serves h's stdio face on w until the client leaves (the
	// func it returns, which waits for it).
	serve := func(h *Hub) (chan error, func()) {
		inR, inW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- h.ServeStdio(context.Background(), inR, w) }()
		return done, func() {
			inW.Close()
			<-done
		}
	}

	cfg := auditConfig(stdout, config.ModeFlat)
	h, err := New(cfg, upstream.New(cfg, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	done, _ := serve(h)
	select {
	case err := <-done:
		if !errors.Is(err, audit.ErrOnStdout) {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the stdio face serves with the audit trail on its stdout")
	}
	h.Close()

	cfg = auditConfig(filepath.Join(t.TempDir(), "a.jsonl"), config.ModeFlat)
	h, err = New(cfg, upstream.New(cfg, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	before := h.snapshot().audit
	_, leave := serve(h)
	defer leave()
	await.For(t, 5*time.Second, "the stdio face", func() bool { return h.stdioOut.Load() != nil })
	h.SetConfig(auditConfig(stdout, config.ModeFlat))
	if h.snapshot().audit != before {
		t.Error("a reload moved the audit trail to the stdio face's stdout")
	}
}
