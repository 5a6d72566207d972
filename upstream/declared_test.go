package upstream

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A manager nobody told what to declare connects at once and declares
// DeclaredCapabilities: no handshake waits for a client's initialize,
// which a 2026-07-28 client never sends.
func TestSharedConnectionDeclaresWithoutWaiting(t *testing.T) {
	t.Parallel()
	m := New(fakeConfig(t, ""), testLogger(t))
	m.routeWait = 50 * time.Millisecond
	m.Start(context.Background())
	t.Cleanup(func() { m.Close() })
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the fake upstream to be ready", func() bool { return s.Status().State == StateReady })
	want, _ := json.Marshal(DeclaredCapabilities())
	if got := stateOf(t, s).Capabilities; !sameJSON(got, want) {
		t.Errorf("declared %s, want %s", got, want)
	}
}

// capableOwner is an owner whose client stated caps, or none yet.
type capableOwner struct {
	caps  mcp.ClientCapabilities
	known bool
}

func (o *capableOwner) ClientCapabilities() (mcp.ClientCapabilities, bool) { return o.caps, o.known }
func (o *capableOwner) UserKey() string                                    { return "" }
func (o *capableOwner) Client() string                                     { return "" }
func (o *capableOwner) SessionID() string                                  { return "" }

// A connection of one client's own (isolation: per-session) declares
// exactly what that client stated; one whose client stated nothing yet,
// and the shared one, what the manager declares.
func TestIsolatedConnectionDeclaresItsClientsCapabilities(t *testing.T) {
	cfg := fakeConfig(t, "stop_grace: 1s")
	cfg.Groups[0].Servers[0].Isolation = config.IsolationPerSession
	_, s := startFake(t, cfg) // declares {} to the shared connection
	sampling := &capableOwner{caps: mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, known: true}
	for _, c := range []struct {
		name  string
		owner Owner
		want  string
	}{
		{"stated", sampling, `{"sampling":{}}`},
		{"not yet stated", &capableOwner{caps: mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}}, `{}`},
		{"shared", nil, `{}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Request(t.Context(), c.owner, "tools/call", map[string]any{"name": "state"}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			var st fakeState
			if json.Unmarshal(res, &r) != nil || len(r.Content) == 0 || json.Unmarshal([]byte(r.Content[0].Text), &st) != nil {
				t.Fatalf("state: %s", res)
			}
			if !sameJSON(st.Capabilities, []byte(c.want)) {
				t.Errorf("declared %s, want %s", st.Capabilities, c.want)
			}
		})
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(ax) == string(by)
}
