package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// fakeBin is the command of the fake upstream, testdata/fakeupstream built
// by TestMain (fakeupstream.Build).
var fakeBin string

func TestMain(m *testing.M) {
	fakeupstream.Run() // started as a fake upstream: serve, then exit
	fakeBin = fakeupstream.Build()
	code := pgtest.Shared(m).Run() // one PostgreSQL cluster for the tests
	// No goroutine outlives the tests: each closes the managers it
	// started, and Close waits for everything a manager started.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testLogger discards, unless -v asks to see the logs.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fakeConfig is a config of one group "g" with one fake upstream started
// with args, and settings (YAML, may be "") under settings:.
func fakeConfig(t testing.TB, settings string, args ...string) *config.Config {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  g:\n    description: fake\n    command: %q\n    args: [%s]\n",
		t.TempDir(), settings, fakeBin, strings.Join(quoted, ", "))
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// startFake starts a manager for cfg, waits until its first server is
// ready and returns both; the manager is closed when the test ends.
func startFake(t testing.TB, cfg *config.Config) (*Manager, *Server) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	m := New(cfg, testLogger(t))
	m.routeWait = 50 * time.Millisecond // most tests read no events
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	t.Cleanup(func() {
		m.Close()
		// Close waited for everything the manager started.
		goleak.VerifyNone(t, before)
	})
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })
	return m, s
}

// callTool calls a tool of the fake and returns the text of its result.
func callTool(t testing.TB, s *Server, name, text string, n int) string {
	t.Helper()
	res, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"text": text, "ms": n}}, 30*time.Second)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("call %s: result %s: %v", name, res, err)
	}
	return r.Content[0].Text
}

// fakeState is what the fake has seen, from its state tool.
type fakeState struct {
	Notified    []string        `json:"notified"`
	LogLevel    string          `json:"logLevel"`
	ToolLists   int             `json:"toolLists"`
	Answers     int             `json:"answers"`
	Refusals    int             `json:"refusals"`
	LastRefusal json.RawMessage `json:"lastRefusal"`
	// Capabilities are what the hub declared in initialize.
	Capabilities json.RawMessage `json:"capabilities"`
}

func stateOf(t testing.TB, s *Server) fakeState {
	t.Helper()
	var st fakeState
	if text := callTool(t, s, "state", "", 0); json.Unmarshal([]byte(text), &st) != nil {
		t.Fatalf("state: %s", text)
	}
	return st
}
