package mcphttp

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// fakeBin is the command of the fake upstream, testdata/fakeupstream built
// by TestMain (fakeupstream.Build).
var fakeBin string

// testClient is the tests' client in place of http.DefaultClient (and
// http.Get, http.Post), whose idle connections every httptest.Server.Close
// closes: a parallel test's POST that had just taken one failed under load
// ("http: CloseIdleConnections called"; a POST is not sent again).
var testClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// TestMain runs the tests, and fails them if any goroutine outlives them:
// every test closes what it started (the face, the hub, the upstreams),
// so whatever is left leaked.
func TestMain(m *testing.M) {
	fakeupstream.Run() // started as a fake upstream: serve, then exit
	fakeBin = fakeupstream.Build()
	code := pgtest.Shared(m).Run()
	if code == 0 {
		testClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const initializeMsg = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"t","version":"1"}}}`

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fakeHub runs a hub in flat mode in front of one fake upstream "f"
// started with args, ready to serve, until the test ends.
func fakeHub(t *testing.T, args ...string) *server.Hub {
	return observedHub(t, nil, args...)
}

// patientHub is fakeHub with a call timeout far beyond any test's wait:
// for tests that make the hub answer large calls (its fake upstream sends
// and the hub rewrites megabytes), which a loaded machine can slow past
// fakeHub's 5 s; such a call then ends in a short error, and a test that
// meant to stall its stream waits for a writer that never comes.
func patientHub(t *testing.T) *server.Hub {
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 10m", ""), nil)
	return h
}

// observedHub is fakeHub with obs (if not nil) watching the hub's traffic.
func observedHub(t *testing.T, obs traffic.Observer, args ...string) *server.Hub {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    args: ["+strings.Join(quoted, ", ")+"]\n"), obs)
	return h
}

// flatFakeYAML is the config of a flat-mode hub in front of one fake
// upstream, group "f", with its state in stateDir, no audit, settings (the
// inside of settings: {...}) and more of the group's keys (lines indented
// by four spaces).
func flatFakeYAML(stateDir, settings, group string) string {
	return fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  f:\n    description: fake\n    command: %q\n%s",
		stateDir, settings, fakeBin, group)
}

// runHub runs a hub for the config yaml, observed by obs (if not nil),
// built and started in serve's order, until the test ends; it returns once
// the hub lists the fake upstream's tools.
func runHub(t testing.TB, yaml string, obs traffic.Observer) (*server.Hub, *upstream.Manager) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	logger := testLogger()
	mgr := upstream.New(cfg, logger)
	h, err := server.New(cfg, mgr, logger)
	if err != nil {
		t.Fatal(err)
	}
	if obs != nil {
		h.Traffic().Observe(obs)
	}
	h.Run()
	mgr.Start(context.Background())
	t.Cleanup(func() { h.Close(); mgr.Close() })
	probe, err := h.Open("probe", "test", nopPeer{})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	list, _ := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	await.For(t, 10*time.Second, "the hub to list the upstream's tools", func() bool {
		res, err := probe.Request(t.Context(), list)
		return err == nil && strings.Contains(string(res), `"f__echo"`)
	})
	return h, mgr
}

// nopPeer is a client that takes nothing.
type nopPeer struct{}

func (nopPeer) Notify(context.Context, []byte) {}
func (nopPeer) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, server.ErrClientGone
}
func (nopPeer) Listening(context.Context) {}
func (nopPeer) Dropped() uint64           { return 0 }
func (nopPeer) Answering() int            { return 0 }
func (nopPeer) Client() string            { return "" }
