package server

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With audit.required, reloads that move the trail back and forth while
// calls run: no call fails for the move, and every call's record is in
// one of the files once the hub is closed.
func TestAuditRequiredMovedUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	h, _ := auditedHub(t, paths[0], true)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	// Fewer than the 256 requests a client may have in flight: the calls
	// are written without waiting, and on a loaded machine 400 of them
	// met that cap (refused -32000), which is not what this test is about.
	const n = 250
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for i := range 40 {
			cfg := *h.config()
			cfg.Audit.Path = paths[(i+1)%2]
			h.SetConfig(&cfg)
			time.Sleep(time.Millisecond)
		}
	}()
	// The calls go in batches below the session's cap of requests in
	// flight (256): a client with more in flight is refused by design,
	// which a slow machine makes happen here.
	const batch = 200
	got := map[string]string{}
	for start := 0; start < n; start += batch {
		ids := make([]string, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ids = append(ids, fmt.Sprint(i+1))
		}
		go func() { // the answers are read meanwhile
			for _, id := range ids {
				if _, err := io.WriteString(c.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"call %s"}}}`+"\n", id, id)); err != nil {
					return
				}
			}
		}()
		answers, _ := c.answersAt(time.Now(), ids...)
		maps.Copy(got, answers)
	}
	<-moved
	failed := 0
	for id, line := range got {
		if !strings.Contains(line, `"text":"call `+id+`"`) {
			failed++
			if failed < 5 {
				t.Errorf("answer %s: %s", id, line)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed while the trail moved", failed, n)
	}
	c.w.Close()
	<-c.done
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if total := lines(t, paths[0]) + lines(t, paths[1]); total != n-failed {
		t.Errorf("%d records for %d calls answered", total, n-failed)
	}
	if lost := h.audits.Lost(); lost != 0 {
		t.Errorf("%d records lost", lost)
	}
}
