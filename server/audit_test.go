package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// auditRecord is one line of the audit trail, as the tests read it.
type auditRecord = audit.Record

// syncBuffer is a log sink that tests read while the hub writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// auditedHub runs a flat-mode hub in front of the fake upstream with its
// audit trail at path (required or not), ready to serve.
func auditedHub(t *testing.T, path string, required bool) (*Hub, *upstream.Manager) {
	t.Helper()
	h, mgr := runHub(t, fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: %q, required: %v}\nsettings: {call_timeout: 5s}\ngroups:\n  f:\n    description: fake\n    command: %q\n",
		t.TempDir(), path, required, fakeBin), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	return h, mgr
}

// A trail whose disk fails (/dev/full: every write is ENOSPC) shows in
// /readyz, with the reason for those who may see reasons, and in the
// metrics as lost records once they can wait no more. Without audit.required calls go on; with it,
// the call whose record was not written and every call after it fail
// closed, with a JSON-RPC error that says why.
func TestAuditFailingDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprintf("required %v", required), func(t *testing.T) {
			h, mgr := auditedHub(t, "/dev/full", required)
			c := servePipes(t, h, StdioOptions{})
			c.initialize()
			call := func(id int) string {
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`, id))
				return c.answer(fmt.Sprint(id))
			}
			first := call(1)
			await.For(t, 10*time.Second, "the trail to fail", func() bool { return h.snapshot().audit.Status() != nil })
			second := call(2)
			if required {
				for _, got := range []string{first, second} {
					if !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "audit trail unavailable") || strings.Contains(got, "/dev/full") {
						t.Errorf("required, a record not written: %s", got)
					}
				}
			} else {
				for _, got := range []string{first, second} {
					if !strings.Contains(got, `"text":"hi"`) {
						t.Errorf("not required: %s", got)
					}
				}
			}

			for _, reasons := range []bool{false, true} {
				rec := httptest.NewRecorder()
				health.Ready(mgr, reasons, h.HealthComponents()...).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
				var rep health.Report
				if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rec.Code != http.StatusServiceUnavailable || rep.Ready {
					t.Fatalf("/readyz: %d %s", rec.Code, rec.Body)
				}
				want := health.ComponentState{Name: "audit", State: "failing"}
				if reasons {
					want.Error = "audit trail: write /dev/full: no space left on device"
				}
				if len(rep.Components) != 1 || rep.Components[0] != want {
					t.Errorf("/readyz components %+v, want %+v", rep.Components, want)
				}
			}

			// The records wait to be written again while the disk fails,
			// and are lost when the trail closes: without required both
			// calls', with it the first's (the second was refused before
			// it had one).
			if n := h.audits.Lost(); n != 0 {
				t.Errorf("%d records lost while they wait to be written again", n)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			lost := uint64(2)
			if required {
				lost = 1
			}
			if n := h.audits.Lost(); n != lost {
				t.Errorf("%d records lost at Close, want %d", n, lost)
			}
			m := telemetry.NewMetrics(mgr, telemetry.MetricsOptions{AuditLost: h.audits.Lost})
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if want := fmt.Sprintf("dynamic_mcp_audit_records_lost_total %d\n", lost); !strings.Contains(rec.Body.String(), want) {
				t.Errorf("/metrics has no %q", want)
			}
		})
	}
}

// Many calls at once all land in the trail, each line whole, written by
// the one writer; Close writes what is still queued before it returns.
func TestAuditConcurrentCallsAllLand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h, _ := auditedHub(t, path, false)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	const n = 64
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprint(i + 1)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"call %d"}}}`, i+1, i+1))
	}
	got, _ := c.answersAt(time.Now(), ids...)
	for id, line := range got {
		if !strings.Contains(line, `"text":"call `+id+`"`) {
			t.Errorf("answer %s: %s", id, line)
		}
	}
	c.w.Close()
	if err := <-c.done; err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	records := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(records) != n {
		t.Fatalf("%d records, want %d", len(records), n)
	}
	for _, line := range records {
		var r auditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Tool != "echo" || r.Outcome != "ok" {
			t.Errorf("record %q: %v", line, err)
		}
	}
	if h.audits.Lost() != 0 || h.snapshot().audit.Status() == nil {
		// After Close the trail is a closed one, which fails.
		t.Errorf("lost %d, status %v", h.audits.Lost(), h.snapshot().audit.Status())
	}
}

// A call after Close loses its record, counted, or with audit.required is
// refused, rather than wait for a trail that is gone.
func TestAuditAfterClose(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{false, true} {
		cfg := auditConfig(filepath.Join(t.TempDir(), "a.jsonl"), config.ModeDynamic)
		cfg.Audit.Required = required
		h, err := New(cfg, upstream.New(cfg, testLogger()), testLogger())
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		snap := h.acquire()
		err = snap.audit.Write(auditRecord{Method: "tools/call"})
		admit := snap.audit.Admit()
		snap.audit.Release()
		if required != (err == audit.ErrUnavailable) || required != (admit == audit.ErrUnavailable) || h.audits.Lost() != 1 {
			t.Errorf("required %v: write %v, admit %v, lost %d", required, err, admit, h.audits.Lost())
		}
	}
}
