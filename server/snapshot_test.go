package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

func auditConfig(path string, mode config.Mode) *config.Config {
	return &config.Config{Mode: mode, Audit: config.Audit{Path: path},
		Settings: config.Settings{PageSize: 10, CallTimeout: config.DefaultCallTimeout, MaxMessageSize: 1 << 20}}
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// A reload swaps config, policy, view and audit trail together.
func TestSetConfigSwapsSnapshotWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := auditConfig(filepath.Join(dir, "a.jsonl"), config.ModeDynamic)
	h, err := New(a, upstream.New(a, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	before := h.snapshot()
	if before.cfg != a || before.view.Mode != config.ModeDynamic || before.policy == nil || before.audit == nil || h.config() != a {
		t.Fatalf("first snapshot %+v", before)
	}
	flat := auditConfig(a.Audit.Path, config.ModeFlat)
	h.SetConfig(flat)
	after := h.snapshot()
	if after.cfg != flat || after.view.Mode != config.ModeFlat || after.policy == before.policy {
		t.Errorf("after reload: %+v", after)
	}
	if after.audit != before.audit {
		t.Error("the audit trail was reopened though it did not move")
	}
	if before.cfg != a || before.view.Mode != config.ModeDynamic {
		t.Error("the old snapshot was modified")
	}
	off := auditConfig("off", config.ModeFlat)
	h.SetConfig(off)
	if h.snapshot().audit != nil {
		t.Error("the audit trail is still on")
	}
	lost := h.audits.Lost()
	if err := before.audit.Write(auditRecord{Method: "x"}); err != nil || h.audits.Lost() != lost+1 {
		t.Errorf("write to a retired trail: %v, lost %d (was %d)", err, h.audits.Lost(), lost)
	}
}

// A request holds the audit trail it loaded: a reload that moves the trail
// closes the old file only after the request's record is in it.
func TestAuditMovedByReloadKeepsRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pathA, pathB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	a, b := auditConfig(pathA, config.ModeDynamic), auditConfig(pathB, config.ModeDynamic)
	h, err := New(a, upstream.New(a, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	snap := h.acquire()
	req := newRequest(h, newSession("t", "stdio"), snap, nil)
	h.SetConfig(b) // moves the trail while the request runs
	missed := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) {
		req.miss("late")
		req.auditMiss("late", nil)
		return nil, nil
	})
	audit.Writer{Trail: snap.audit, Outcome: outcomeOf}.Handle(context.Background(), &req.call, missed)
	snap.audit.Release()
	serveMiss(t, h, "after")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, pathA); got != 1 {
		t.Errorf("%d records in the old trail, want the request's 1", got)
	}
	if got := lines(t, pathB); got != 1 {
		t.Errorf("%d records in the new trail, want 1", got)
	}
	if err := snap.audit.Write(auditRecord{}); err != nil || h.audits.Lost() != 1 {
		t.Errorf("the old trail is still open: %v, lost %d", err, h.audits.Lost())
	}
}

// However reloads move the trail, no record written meanwhile is lost.
func TestAuditReloadsLoseNoRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pathA, pathB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	a, b := auditConfig(pathA, config.ModeDynamic), auditConfig(pathB, config.ModeDynamic)
	h, err := New(a, upstream.New(a, testLogger()), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				serveMiss(t, h, "tool")
			}
		})
	}
	wg.Go(func() {
		for i := range 100 {
			if i%2 == 0 {
				h.SetConfig(b)
			} else {
				h.SetConfig(a)
			}
		}
	})
	wg.Wait()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, pathA) + lines(t, pathB); got != writers*each {
		t.Errorf("%d records, want %d", got, writers*each)
	}
}

// serveMiss has h answer a tools/call of a tool that does not exist, which
// writes an audit record.
func serveMiss(t *testing.T, h *Hub, name string) {
	msg, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `"}}`))
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := h.serve(context.Background(), newSession("t", "stdio"), msg); jsonrpc.ToError(err).Code != codeMethodNotFound {
		t.Errorf("a call of %s: %v", name, err)
	}
}
