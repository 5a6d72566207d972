package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// syncBuffer is a log sink that tests read while the trail writes.
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
	var stats Stats
	a := newTrail(f, config.Audit{}, testLogger(), &stats)
	const n = 100
	a.Hold()
	for i := range n {
		if err := a.Write(Record{Method: "tools/call", Tool: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	a.Retire()
	a.Release() // the last holder: the trail closes
	a.run()     // the writer, started late: everything is queued already
	if got := lines(t, path); got != n {
		t.Errorf("%d records in the file, want %d", got, n)
	}
	if a.writes != 1 {
		t.Errorf("%d writes for %d queued records, want 1", a.writes, n)
	}
	if stats.lost.Load() != 0 || a.Status() != nil {
		t.Errorf("lost %d, status %v", stats.lost.Load(), a.Status())
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
				var stats Stats
				a := newTrail(nil, config.Audit{Required: required}, slog.New(slog.NewTextHandler(&log, nil)), &stats)
				// No writer runs: the disk hangs.
				if !required {
					for range queueLen {
						if err := a.Write(Record{}); err != nil {
							t.Fatal(err)
						}
					}
				} else {
					for range queueLen {
						a.queue <- entry{line: []byte("{}\n")}
					}
				}
				if err := a.Admit(); err != nil {
					t.Fatalf("admit before any loss: %v", err)
				}
				start := time.Now()
				err := a.Write(Record{})
				if waited := time.Since(start); waited != queueWait {
					t.Errorf("waited %v for room, want %v", waited, queueWait)
				}
				a.Write(Record{})
				if stats.lost.Load() != 2 || !errors.Is(a.Status(), errFull) {
					t.Errorf("lost %d, status %v", stats.lost.Load(), a.Status())
				}
				if n := strings.Count(log.String(), "audit trail failing"); n != 1 {
					t.Errorf("logged %d times for one burst:\n%s", n, log.String())
				}
				if required {
					if err != ErrUnavailable || a.Admit() != ErrUnavailable {
						t.Errorf("required: write %v, admit %v", err, a.Admit())
					}
				} else if err != nil || a.Admit() != nil {
					t.Errorf("not required: write %v, admit %v", err, a.Admit())
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
		var stats Stats
		a := newTrail(disk, config.Audit{}, testLogger(), &stats)
		go a.run()
		a.Hold()
		if err := a.Write(Record{Method: "tools/call", Tool: "before"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		disk.set(true)
		if err := a.Write(Record{Method: "tools/call", Tool: "torn"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a.Status() == nil {
			t.Fatal("the trail does not fail on a short write")
		}
		a.Retire()
		a.Release()
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
		var stats Stats
		a := newTrail(disk, config.Audit{Required: true}, testLogger(), &stats)
		go a.run()
		a.Hold()
		if err := a.Write(Record{Method: "tools/call", Tool: "first"}); err != ErrUnavailable {
			t.Fatalf("a record the disk did not take: %v", err)
		}
		if a.Status() == nil || a.Admit() != ErrUnavailable {
			t.Fatalf("failing: status %v, admit %v", a.Status(), a.Admit())
		}
		time.Sleep(3 * retryEvery) // tried again, and failed again
		disk.set(false)
		time.Sleep(retryEvery)
		synctest.Wait()
		if a.Status() != nil || a.Admit() != nil {
			t.Fatalf("recovered: status %v, admit %v", a.Status(), a.Admit())
		}
		if err := a.Write(Record{Method: "tools/call", Tool: "second"}); err != nil {
			t.Fatal(err)
		}
		a.Retire()
		a.Release()
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

// shortFile is a real audit file (opened as Open opens it) whose
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
		var stats Stats
		a := newTrail(file, config.Audit{}, testLogger(), &stats)
		go a.run()
		a.Hold()
		a.Write(Record{Method: "tools/call", Tool: "one"})
		synctest.Wait()
		one, _ := os.ReadFile(path)
		file.short.Store(true)
		a.Write(Record{Method: "tools/call", Tool: "two"})
		synctest.Wait()
		if now, _ := os.ReadFile(path); len(now) != len(one) {
			t.Fatalf("after the short write the file is %d bytes, want %d (cut back): %q", len(now), len(one), now)
		}
		time.Sleep(retryEvery)
		synctest.Wait()
		a.Retire()
		a.Release()
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
		var stats Stats
		a := newTrail(disk, config.Audit{}, testLogger(), &stats)
		disk.write = func() { disk.data.WriteString("{\"other\":1}\n") } // right after the short write
		go a.run()
		a.Hold()
		if err := a.Write(Record{Method: "tools/call", Tool: "torn"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		disk.set(false)
		time.Sleep(retryEvery)
		synctest.Wait()
		a.Retire()
		a.Release()
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
		var stats Stats
		a := newTrail(disk, config.Audit{Arguments: true}, testLogger(), &stats)
		a.Hold()
		// The largest arguments a record keeps, in as many records as the
		// queue holds: more than the bound.
		rec := Record{Method: "tools/call", Arguments: json.RawMessage(`"` + strings.Repeat("x", maxArguments-2) + `"`)}
		line, _ := json.Marshal(rec)
		const n = queueLen
		kept := pendingBytes / (len(line) + 1)
		if kept >= n {
			t.Fatalf("%d lines of %d bytes fit the bound", n, len(line)+1)
		}
		for range n {
			if err := a.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		go a.run() // writes them in batches, each failing
		synctest.Wait()
		if got := stats.lost.Load(); got != uint64(n-kept) {
			// The oldest lines that fit the bound are kept.
			t.Errorf("%d records lost beyond the bound, want %d", got, n-kept)
		}
		a.Retire()
		a.Release()
		synctest.Wait()
		if got := stats.lost.Load(); got != n {
			t.Errorf("%d records lost at close, want %d", got, n)
		}
	})
}

// testLogger is the logger of a test's trail: to stderr with -v, else
// nowhere.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// lines is how many lines the file at path holds (0 for none).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// Every string of a record is cut on a character's boundary, the error
// that quotes a name as much as the name.
func TestAuditRecordClip(t *testing.T) {
	long := strings.Repeat("é", maxText) // two bytes each
	r := Record{Session: long, Group: "g", Tool: long, URI: long, Prompt: long, Rule: long, Error: "Tool not found: " + long,
		Grant: long, ApprovedBy: "cli:" + long, Event: long}
	bound(&r)
	for _, s := range []string{r.Session, r.Tool, r.URI, r.Prompt, r.Rule, r.Error, r.Grant, r.ApprovedBy, r.Event} {
		if !utf8.ValidString(s) || !strings.HasSuffix(s, ClippedMark) || len(s) > maxText+len(ClippedMark) {
			t.Errorf("clipped to %d bytes: %.40q...", len(s), s)
		}
	}
	if r.Group != "g" || !r.Clipped {
		t.Errorf("group %q, clipped %v", r.Group, r.Clipped)
	}
}
