package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// hookedFile is a trail's file, opened as Open opens it, whose first
// write stops after 10 bytes (a disk that fills) and calls torn before it
// returns; every whole write calls wrote after it.
type hookedFile struct {
	*os.File
	short       atomic.Bool
	torn, wrote func()
}

func (f *hookedFile) Write(p []byte) (int, error) {
	if f.short.Swap(false) {
		n, _ := f.File.Write(p[:min(10, len(p))])
		f.torn()
		return n, errors.New("no space left on device")
	}
	n, err := f.File.Write(p)
	if f.wrote != nil {
		f.wrote()
	}
	return n, err
}

// sharedTrail is a trail on path with its own handle, locked per batch as
// Open sets it.
func sharedTrail(t *testing.T, path string) (*Trail, *hookedFile) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	hf := &hookedFile{File: f}
	a := newTrail(hf, config.Audit{}, testLogger(), &Stats{})
	a.lockFile = f
	return a, hf
}

// Two hubs of one config write one trail, each with its own handle. One
// write of the first stops part way; the second hub's record, written
// meanwhile, waits for the file lock until the first has cut its torn
// part back, so the trail holds both records as whole lines. Without the
// lock the second's line landed after the torn part, which could then not
// be cut, and the trail held two torn lines.
func TestAuditSharedTrailLinesWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		first, firstFile := sharedTrail(t, path)
		second, secondFile := sharedTrail(t, path)
		secondWrote := make(chan struct{}, 1)
		secondFile.wrote = func() { secondWrote <- struct{}{} }
		firstFile.torn = func() {
			second.Write(Record{Method: "tools/call", Tool: "other"})
			// Give the second hub the time a write takes: with the lock
			// it waits for this one's batch to end.
			select {
			case <-secondWrote:
			case <-time.After(time.Second):
			}
		}
		var writers sync.WaitGroup
		writers.Go(first.run)
		writers.Go(second.run)
		first.Hold()
		second.Hold()
		firstFile.short.Store(true)
		first.Write(Record{Method: "tools/call", Tool: "torn"})
		synctest.Wait()
		time.Sleep(retryEvery)
		synctest.Wait()
		for _, a := range []*Trail{first, second} {
			a.Retire()
			a.Release()
		}
		writers.Wait()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != 2 || !json.Valid([]byte(lines[0])) || !json.Valid([]byte(lines[1])) ||
			!strings.Contains(string(b), `"tool":"torn"`) || !strings.Contains(string(b), `"tool":"other"`) {
			t.Fatalf("the shared trail, want 2 whole lines:\n%s", b)
		}
	})
}
