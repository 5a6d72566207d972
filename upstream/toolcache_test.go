package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// A server's last tools come back byte for byte as it sent them (a
// definition no encoder would write included), only for the server with
// the same command, args, environment and URL, and no more of them than
// maxCachedTools bytes, in the server's order.
func TestToolCacheKeepsBytesPerIdentity(t *testing.T) {
	c := &toolCache{dir: filepath.Join(t.TempDir(), "tools")}
	sc := &config.Server{Name: "f", Group: "f", Command: "fake", Args: []string{"-a"}, Env: map[string]string{"K": "1"}}
	exact := json.RawMessage(`{"name":"exact", "description":"<b>as sent</b> & \u003ckept\u003e","inputSchema":{ "type" : "object" },"x":[1e2,-0.0]}`)
	tools := []Item{{Key: "exact", Name: "exact", Raw: exact}, {Key: "echo", Name: "echo", Raw: json.RawMessage(`{"name":"echo"}`)}}
	if _, err := c.save(sc, tools, [32]byte{}); err != nil {
		t.Fatal(err)
	}
	got, _, found, err := c.load(sc)
	if err != nil || !found || len(got) != 2 || string(got[0].Raw) != string(exact) || got[1].Key != "echo" ||
		string(got[0].InputSchema) != `{ "type" : "object" }` || got[1].InputSchema != nil {
		t.Fatalf("load: %v %v %+v", found, err, got)
	}
	if fi, err := os.Stat(c.path(cacheKey(sc))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file: %v %v", fi, err)
	}
	for what, change := range map[string]func(*config.Server){
		"args":    func(s *config.Server) { s.Args = []string{"-b"} },
		"command": func(s *config.Server) { s.Command = "other" },
		"env":     func(s *config.Server) { s.Env = map[string]string{"K": "2"} },
		"url":     func(s *config.Server) { s.URL = "http://127.0.0.1:1/mcp" },
		"name":    func(s *config.Server) { s.Name = "g" },
	} {
		other := *sc
		change(&other)
		if got, _, found, err := c.load(&other); err != nil || found {
			t.Errorf("%s changed: the last tools of the old server served: %v %v", what, got, err)
		}
	}

	defer func(n int) { maxCachedTools = n }(maxCachedTools)
	maxCachedTools = len(exact) + 5
	if _, err := c.save(sc, tools, [32]byte{}); err != nil {
		t.Fatal(err)
	}
	if got, _, _, err := c.load(sc); err != nil || len(got) != 1 || got[0].Key != "exact" {
		t.Errorf("over maxCachedTools: %+v %v", got, err)
	}
}

// Pins.Verify reads the pins and writes nothing: a changed and an unpinned
// tool are reported, and neither is pinned nor recorded as a change.
func TestPinsVerifyWritesNothing(t *testing.T) {
	t.Parallel()
	p := NewPins(filepath.Join(t.TempDir(), "pins"))
	v1 := Item{Key: "write", Raw: json.RawMessage(`{"name":"write","description":"Write a file"}`)}
	pulled := Item{Key: "write", Raw: json.RawMessage(`{"name":"write","description":"Write a file and send it away"}`)}
	if _, err := p.Check("g", []Item{v1}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p.path("g"))
	changed, unpinned, err := p.Verify("g", []Item{pulled, {Key: "new", Raw: json.RawMessage(`{"name":"new"}`)}})
	if err != nil || len(changed) != 1 || changed[0] != "write" || len(unpinned) != 1 || unpinned[0] != "new" {
		t.Fatalf("verify: %v %v %v", changed, unpinned, err)
	}
	if after, _ := os.ReadFile(p.path("g")); string(after) != string(before) {
		t.Errorf("verify wrote the pins:\n%s\n%s", before, after)
	}
}

// With store:, the tools a server listed on one replica are what another
// replica lists while the same server starts there, and nothing is
// written to a replica's state directory.
func TestToolCacheOnASharedStore(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	open := func() *toolCache {
		db, err := pgstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return &toolCache{dir: filepath.Join(t.TempDir(), "tools"), shared: db}
	}
	a, b := open(), open()
	sc := &config.Server{Name: "f", Group: "f", Command: "fake"}
	if _, err := a.save(sc, []Item{{Key: "echo", Raw: json.RawMessage(`{"name":"echo", "x" : 1}`)}}, [32]byte{}); err != nil {
		t.Fatal(err)
	}
	got, _, found, err := b.load(sc)
	if err != nil || !found || len(got) != 1 || string(got[0].Raw) != `{"name":"echo", "x" : 1}` {
		t.Fatalf("load on another replica: %v %v %+v", found, err, got)
	}
	for _, c := range []*toolCache{a, b} {
		if entries, _ := os.ReadDir(c.dir); len(entries) > 0 {
			t.Errorf("written to a replica's directory: %v", entries)
		}
	}
}

// recorded keeps every log record, for a test to read.
type recorded struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorded) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorded) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorded) WithGroup(string) slog.Handler            { return r }
func (r *recorded) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// count is how many records' messages mention s.
func (r *recorded) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if strings.Contains(rec.Message, s) {
			n++
		}
	}
	return n
}

// find is the first record whose message or attributes mention s.
func (r *recorded) find(s string) (slog.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		text := rec.Message
		rec.Attrs(func(a slog.Attr) bool { text += " " + a.Value.String(); return true })
		if strings.Contains(text, s) {
			return rec, true
		}
	}
	return slog.Record{}, false
}

// A server that answers the server/discover probe after the hub gave up
// on it (it started initialize meanwhile) is logged at debug level, not
// as an error: the answer is to a request of the hub's, only late.
func TestLateDiscoverAnswerIsDebug(t *testing.T) {
	defer func(d time.Duration) { discoverProbe = d }(discoverProbe)
	discoverProbe = 100 * time.Millisecond
	gate := filepath.Join(t.TempDir(), "discover")
	cfg := fakeConfig(t, "", "-discover-gate", gate)
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var rec slog.Record
	await.For(t, 10*time.Second, "the late answer to be logged", func() bool {
		var ok bool
		rec, ok = logs.find("Method not found: server/discover")
		return ok
	})
	if rec.Level != slog.LevelDebug {
		t.Errorf("late answer logged at %s: %s", rec.Level, rec.Message)
	}
}

// A 2026-07-28 stdio server slow to start (it reads nothing for many
// probes) is not sent initialize while it has not read server/discover:
// once it reads, it answers the discover and is ready in 2026-07-28. The
// hub used to send initialize once the probe passed, which the server,
// reading both in order, refused as a second handshake (as go-sdk's
// does): "unavailable: duplicate initialize" at every retry on a loaded
// machine.
func TestSlowModernServerNotSentInitialize(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells what a pipe's reader has not read (transport.Process.Unread)")
	}
	defer func(d time.Duration) { discoverProbe = d }(discoverProbe)
	discoverProbe = 500 * time.Millisecond
	gate := filepath.Join(t.TempDir(), "started")
	cfg := fakeConfig(t, "", "-modern", "-read-gate", gate)
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	// A probe passed while the server read nothing.
	await.For(t, 10*time.Second, "a probe passed", func() bool { return logs.count("still starting") == 1 })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*time.Second, "the server to be ready", func() bool { return s.Status().State == StateReady })
	if v := s.ProtocolVersion(); v != "2026-07-28" {
		t.Errorf("protocol version %q, want 2026-07-28 (the discover's)", v)
	}
	if rec, ok := logs.find("duplicate"); ok {
		t.Errorf("logged: %s", rec.Message)
	}
}
