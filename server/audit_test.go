package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

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

// Records queued while the writer is busy go to the file in one write,
// and every one of them is written before the trail closes.
func TestAuditWriterBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var stats auditStats
	a := newAuditLog(f, config.Audit{}, testLogger(), &stats)
	const n = 100
	a.hold()
	for i := range n {
		if err := a.write(auditRecord{Method: "tools/call", Tool: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	a.retire()
	a.release() // the last holder: the trail closes
	a.run()     // the writer, started late: everything is queued already
	if got := lines(t, path); got != n {
		t.Errorf("%d records in the file, want %d", got, n)
	}
	if a.writes != 1 {
		t.Errorf("%d writes for %d queued records, want 1", a.writes, n)
	}
	if stats.lost.Load() != 0 || a.status() != nil {
		t.Errorf("lost %d, status %v", stats.lost.Load(), a.status())
	}
}

// A record that finds the queue full waits a bounded time for room, then
// is counted as lost, makes the trail failing and is logged, once for the
// burst. With audit.required the call then fails closed, and no further
// call is admitted while the trail fails.
func TestAuditQueueFull(t *testing.T) {
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprintf("required %v", required), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log syncBuffer
				var stats auditStats
				a := newAuditLog(nil, config.Audit{Required: required}, slog.New(slog.NewTextHandler(&log, nil)), &stats)
				// No writer runs: the disk hangs.
				if !required {
					for range auditQueueLen {
						if err := a.write(auditRecord{}); err != nil {
							t.Fatal(err)
						}
					}
				} else {
					for range auditQueueLen {
						a.queue <- auditEntry{line: []byte("{}\n")}
					}
				}
				if err := a.admit(); err != nil {
					t.Fatalf("admit before any loss: %v", err)
				}
				start := time.Now()
				err := a.write(auditRecord{})
				if waited := time.Since(start); waited != auditQueueWait {
					t.Errorf("waited %v for room, want %v", waited, auditQueueWait)
				}
				a.write(auditRecord{})
				if stats.lost.Load() != 2 || !errors.Is(a.status(), errAuditFull) {
					t.Errorf("lost %d, status %v", stats.lost.Load(), a.status())
				}
				if n := strings.Count(log.String(), "audit trail failing"); n != 1 {
					t.Errorf("logged %d times for one burst:\n%s", n, log.String())
				}
				if required {
					if err != auditUnavailable || a.admit() != auditUnavailable {
						t.Errorf("required: write %v, admit %v", err, a.admit())
					}
				} else if err != nil || a.admit() != nil {
					t.Errorf("not required: write %v, admit %v", err, a.admit())
				}
			})
		})
	}
}

// flakyDisk is an audit file whose writes fail while full is set, having
// written the first partial bytes of what they were given.
type flakyDisk struct {
	mu      sync.Mutex
	full    bool
	partial int
	data    bytes.Buffer
	write   func() // another writer, once, after the next failed write (mu held)
}

func (d *flakyDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.full {
		n := min(d.partial, len(p))
		d.data.Write(p[:n])
		if d.write != nil {
			d.write()
			d.write = nil
		}
		return n, errors.New("no space left on device")
	}
	return d.data.Write(p)
}

func (d *flakyDisk) set(full bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full = full
}

func (d *flakyDisk) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.data.String()
}

func (d *flakyDisk) Sync() error  { return nil }
func (d *flakyDisk) Close() error { return nil }

// Stat, ReadAt and Truncate are as an *os.File has them.
func (d *flakyDisk) Stat() (os.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return diskInfo{size: int64(d.data.Len())}, nil
}

func (d *flakyDisk) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.NewReader(d.data.Bytes()).ReadAt(p, off)
}

func (d *flakyDisk) Truncate(size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.data.Truncate(int(size))
	return nil
}

// diskInfo is a flakyDisk's os.FileInfo: its size, the rest zero.
type diskInfo struct {
	os.FileInfo
	size int64
}

func (i diskInfo) Size() int64 { return i.size }

// A write the disk takes only part of leaves no torn line: the file is cut
// back to the size it had before the write, so a trail that closes with the
// disk still full holds only whole lines (here the 1 written before), and
// the next line starts a line of its own instead of being glued to the
// torn one's first 10 bytes.
func TestAuditShortWriteTruncated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := &flakyDisk{partial: 10}
		var stats auditStats
		a := newAuditLog(disk, config.Audit{}, testLogger(), &stats)
		go a.run()
		a.hold()
		if err := a.write(auditRecord{Method: "tools/call", Tool: "before"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		disk.set(true)
		if err := a.write(auditRecord{Method: "tools/call", Tool: "torn"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a.status() == nil {
			t.Fatal("the trail does not fail on a short write")
		}
		a.retire()
		a.release()
		synctest.Wait()
		trail := disk.String()
		recs := strings.Split(strings.TrimSuffix(trail, "\n"), "\n")
		if !strings.HasSuffix(trail, "\n") || len(recs) != 1 || !json.Valid([]byte(recs[0])) {
			t.Fatalf("the trail after a short write, want 1 whole line:\n%q", trail)
		}
		if n := stats.lost.Load(); n != 1 {
			t.Errorf("%d records lost, want 1", n)
		}
	})
}

// A disk that fails for a while loses no record: what a failed write left
// (all but the first 10 bytes of a line here) is written again, whole, once the disk takes it, and
// the trail then works again, by itself: with audit.required the call
// whose record failed was refused, calls are refused while it fails, and
// admitted again after.
func TestAuditDiskRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := &flakyDisk{full: true, partial: 10}
		var stats auditStats
		a := newAuditLog(disk, config.Audit{Required: true}, testLogger(), &stats)
		go a.run()
		a.hold()
		if err := a.write(auditRecord{Method: "tools/call", Tool: "first"}); err != auditUnavailable {
			t.Fatalf("a record the disk did not take: %v", err)
		}
		if a.status() == nil || a.admit() != auditUnavailable {
			t.Fatalf("failing: status %v, admit %v", a.status(), a.admit())
		}
		time.Sleep(3 * auditRetry) // tried again, and failed again
		disk.set(false)
		time.Sleep(auditRetry)
		synctest.Wait()
		if a.status() != nil || a.admit() != nil {
			t.Fatalf("recovered: status %v, admit %v", a.status(), a.admit())
		}
		if err := a.write(auditRecord{Method: "tools/call", Tool: "second"}); err != nil {
			t.Fatal(err)
		}
		a.retire()
		a.release()
		synctest.Wait()
		recs := strings.Split(strings.TrimSuffix(disk.String(), "\n"), "\n")
		if len(recs) != 2 || !strings.Contains(recs[0], `"tool":"first"`) || !strings.Contains(recs[1], `"tool":"second"`) {
			t.Fatalf("the trail:\n%s", disk.String())
		}
		for _, r := range recs {
			if !json.Valid([]byte(r)) {
				t.Errorf("a torn line: %s", r)
			}
		}
		if n := stats.lost.Load(); n != 0 {
			t.Errorf("%d records lost", n)
		}
	})
}

// shortFile is a real audit file (opened as openAudit opens it) whose
// next write stops after its first 10 bytes, as a disk that fills does.
type shortFile struct {
	*os.File
	short atomic.Bool
}

func (f *shortFile) Write(p []byte) (int, error) {
	if f.short.Swap(false) {
		n, _ := f.File.Write(p[:min(10, len(p))])
		return n, errors.New("no space left on device")
	}
	return f.File.Write(p)
}

// On a real file, opened for appending as the trail opens it, a short
// write is cut back (the file is the size it had before it) and written
// again whole: 2 valid lines.
func TestAuditShortWriteRealFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		file := &shortFile{File: f}
		var stats auditStats
		a := newAuditLog(file, config.Audit{}, testLogger(), &stats)
		go a.run()
		a.hold()
		a.write(auditRecord{Method: "tools/call", Tool: "one"})
		synctest.Wait()
		one, _ := os.ReadFile(path)
		file.short.Store(true)
		a.write(auditRecord{Method: "tools/call", Tool: "two"})
		synctest.Wait()
		if now, _ := os.ReadFile(path); len(now) != len(one) {
			t.Fatalf("after the short write the file is %d bytes, want %d (cut back): %q", len(now), len(one), now)
		}
		time.Sleep(auditRetry)
		synctest.Wait()
		a.retire()
		a.release()
		synctest.Wait()
		b, _ := os.ReadFile(path)
		recs := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(recs) != 2 || !json.Valid([]byte(recs[0])) || !json.Valid([]byte(recs[1])) || !strings.Contains(recs[1], `"tool":"two"`) {
			t.Fatalf("the trail, want 2 whole lines:\n%s", b)
		}
	})
}

// A short write is cut back only while the file ends with what it wrote:
// another writer's line (another hub of the same config) appended after
// the torn part is kept, and the torn line is completed, not cut, once the
// disk takes the rest: the file then holds the 3 lines of both writers, the
// torn one split around the other's.
func TestAuditShortWriteKeepsOthersLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := &flakyDisk{full: true, partial: 10}
		var stats auditStats
		a := newAuditLog(disk, config.Audit{}, testLogger(), &stats)
		disk.write = func() { disk.data.WriteString("{\"other\":1}\n") } // right after the short write
		go a.run()
		a.hold()
		if err := a.write(auditRecord{Method: "tools/call", Tool: "torn"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		disk.set(false)
		time.Sleep(auditRetry)
		synctest.Wait()
		a.retire()
		a.release()
		synctest.Wait()
		trail := disk.String()
		if !strings.Contains(trail, "{\"other\":1}\n") || strings.Count(trail, `"tool":"torn"`) != 1 || !strings.Contains(trail, "\n") {
			t.Fatalf("another writer's line cut, or the torn line lost:\n%q", trail)
		}
		if n := stats.lost.Load(); n != 0 {
			t.Errorf("%d records lost", n)
		}
	})
}

// A failing trail keeps what it will write again up to a bound: the lines
// beyond it are lost, counted at once; those it kept are counted when the
// trail closes with the disk still failing.
func TestAuditFailingKeepsBoundedLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := &flakyDisk{full: true}
		var stats auditStats
		a := newAuditLog(disk, config.Audit{Arguments: true}, testLogger(), &stats)
		a.hold()
		// The largest arguments a record keeps, in as many records as the
		// queue holds: more than the bound.
		rec := auditRecord{Method: "tools/call", Arguments: json.RawMessage(`"` + strings.Repeat("x", maxAuditArguments-2) + `"`)}
		line, _ := json.Marshal(rec)
		const n = auditQueueLen
		kept := auditPendingBytes / (len(line) + 1)
		if kept >= n {
			t.Fatalf("%d lines of %d bytes fit the bound", n, len(line)+1)
		}
		for range n {
			if err := a.write(rec); err != nil {
				t.Fatal(err)
			}
		}
		go a.run() // writes them in batches, each failing
		synctest.Wait()
		if got := stats.lost.Load(); got != uint64(n-kept) {
			// The oldest lines that fit the bound are kept.
			t.Errorf("%d records lost beyond the bound, want %d", got, n-kept)
		}
		a.retire()
		a.release()
		synctest.Wait()
		if got := stats.lost.Load(); got != n {
			t.Errorf("%d records lost at close, want %d", got, n)
		}
	})
}

// auditedHub runs a flat-mode hub in front of the fake upstream with its
// audit trail at path (required or not), ready to serve.
func auditedHub(t *testing.T, path string, required bool) (*Hub, *upstream.Manager) {
	t.Helper()
	h, mgr := runHub(t, fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: %q, required: %v}\nsettings: {call_timeout: 5s}\ngroups:\n  f:\n    description: fake\n    command: %q\n",
		t.TempDir(), path, required, fakeBin), true)
	waitFor(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	waitFor(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.flatRoutes["f__echo"]; return ok })
	return h, mgr
}

// A trail whose disk fails (/dev/full: every write is ENOSPC) shows in
// /readyz, with the reason for those who may see reasons, and in the
// metrics as lost records once they can wait no more. Without audit.required calls go on; with it,
// the call whose record was not written and every call after it fail
// closed, with a JSON-RPC error that says why.
func TestAuditFailingDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprintf("required %v", required), func(t *testing.T) {
			h, mgr := auditedHub(t, "/dev/full", required)
			c := servePipes(t, h, StdioOptions{})
			c.send(initializeMsg)
			c.answer("0")
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			call := func(id int) string {
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`, id))
				return c.answer(fmt.Sprint(id))
			}
			first := call(1)
			waitFor(t, 10*time.Second, "the trail to fail", func() bool { return h.AuditStatus() != nil })
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
			if n := h.AuditLost(); n != 0 {
				t.Errorf("%d records lost while they wait to be written again", n)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			lost := uint64(2)
			if required {
				lost = 1
			}
			if n := h.AuditLost(); n != lost {
				t.Errorf("%d records lost at Close, want %d", n, lost)
			}
			m := telemetry.NewMetrics(mgr, telemetry.MetricsOptions{AuditLost: h.AuditLost})
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
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	h, _ := auditedHub(t, path, false)
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
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
	if h.AuditLost() != 0 || h.AuditStatus() == nil {
		// After Close the trail is a closed one, which fails.
		t.Errorf("lost %d, status %v", h.AuditLost(), h.AuditStatus())
	}
}

// A call after Close loses its record, counted, or with audit.required is
// refused, rather than wait for a trail that is gone.
func TestAuditAfterClose(t *testing.T) {
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
		err = snap.audit.write(auditRecord{Method: "tools/call"})
		admit := snap.audit.admit()
		snap.audit.release()
		if required != (err == auditUnavailable) || required != (admit == auditUnavailable) || h.AuditLost() != 1 {
			t.Errorf("required %v: write %v, admit %v, lost %d", required, err, admit, h.AuditLost())
		}
	}
}
