package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// The hub answers the handshake, ping, logging/setLevel and methods that
// do not exist itself (clients.Protocol), as mcp-go's MCPServer answered them
// when the hub handed them to it: every answer here, and what it leaves
// on the session, is held against that MCPServer's, built as the hub
// built it, driven as the hub drove it.

// mcpgoSession is a hub session as mcp-go's MCPServer saw it.
type mcpgoSession struct {
	*session
	ch chan mcp.JSONRPCNotification
}

func (s mcpgoSession) SessionID() string                                   { return s.id }
func (s mcpgoSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }

// mcpgoHub is the MCPServer the hub kept until it answered these itself.
func mcpgoHub() *mcpserver.MCPServer {
	return mcpserver.NewMCPServer("dynamic-mcp", Version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithCompletions(),
		mcpserver.WithTaskCapabilities(true, true, true),
		mcpserver.WithLogging(),
	)
}

// mcpgoAnswer is the hub's answer to msg from before: its era's checks,
// then mcp-go's MCPServer, its result as the hub encoded it.
func mcpgoAnswer(srv *mcpserver.MCPServer, sess *session, msg *jsonrpc.Message) (json.RawMessage, error) {
	if len(msg.Params) > 0 {
		params, _ := jsonrpc.ScanObject(msg.Params)
		st := era.StateOf(params, msg.Params)
		sess.stated(st)
		if st.Modern {
			if err := st.Check(msg.Method); err != nil {
				return nil, err
			}
		}
	}
	ctx := srv.WithContext(context.Background(), mcpgoSession{sess, make(chan mcp.JSONRPCNotification, 1)})
	switch r := srv.HandleMessage(ctx, msg.Raw).(type) {
	case mcp.JSONRPCResponse:
		return jsonrpc.Marshal(r.Result)
	case mcp.JSONRPCError:
		return nil, &rpcError{Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	default:
		return nil, fmt.Errorf("unexpected answer %T", r)
	}
}

// answerText is an answer as the client reads it.
func answerText(res json.RawMessage, err error) string {
	if err != nil {
		e := jsonrpc.ToError(err)
		data, _ := json.Marshal(e.Data)
		return fmt.Sprintf("error %d %q %s", e.Code, e.Message, data)
	}
	return string(res)
}

func TestHandshakeAnswersAsMCPGo(t *testing.T) {
	t.Parallel()
	const (
		modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"m","version":"2"}}`
		badCaps    = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":5}}`
	)
	initialize := func(version string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
			`","capabilities":{"roots":{"listChanged":true},"elicitation":{"form":{}}},"clientInfo":{"name":"c","title":"C","version":"1.0"}}}`
	}
	const initialized = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, tc := range []struct {
		name string
		msgs []string // sent in turn on one session, each answer compared
	}{
		{"initialize 2025-06-18", []string{initialize("2025-06-18")}},
		{"initialize 2024-11-05", []string{initialize("2024-11-05")}},
		{"initialize 2025-03-26", []string{initialize("2025-03-26")}},
		{"initialize 2025-11-25", []string{initialize("2025-11-25")}},
		{"initialize 2026-07-28", []string{initialize("2026-07-28")}},
		{"initialize unknown version", []string{initialize("1999-01-01")}},
		{"initialize no version", []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`}},
		{"initialize no params", []string{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`}},
		{"initialize wrong types", []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`}},
		{"initialize twice", []string{initialize("2025-06-18"), initialize("2024-11-05")}},
		{"ping", []string{`{"jsonrpc":"2.0","id":"p","method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"progressToken":1}}}`}},
		{"ping wrong params", []string{`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":7}}`}},
		{"setLevel before initialize", []string{`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`}},
		{"setLevel", []string{initialized,
			`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`,
			`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"loud"}}`,
			`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":7}}`,
			`{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{}}`,
			`{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"emergency"}}`}},
		{"unknown method", []string{`{"jsonrpc":"2.0","id":8,"method":"foo/bar","params":{}}`, `{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`}},
		{"server/discover before 2026-07-28", []string{`{"jsonrpc":"2.0","id":10,"method":"server/discover","params":{}}`}},
		{"server/discover", []string{`{"jsonrpc":"2.0","id":11,"method":"server/discover","params":{` + modernMeta + `}}`}},
		{"server/discover, capabilities that do not decode", []string{`{"jsonrpc":"2.0","id":12,"method":"server/discover","params":{` + badCaps + `}}`}},
		{"unknown method in 2026-07-28", []string{`{"jsonrpc":"2.0","id":13,"method":"foo/bar","params":{` + modernMeta + `}}`}},
		{"removed in 2026-07-28", []string{`{"jsonrpc":"2.0","id":14,"method":"ping","params":{` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":15,"method":"initialize","params":{` + modernMeta + `}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHub(config.ModeDynamic)
			defer h.mgr.Close()
			srv := mcpgoHub()
			ours, theirs := newSession("s", "streamable-http"), newSession("s", "streamable-http")
			ours.peer, theirs.peer = &recordingPeer{}, &recordingPeer{}
			if err := h.routes.Add(ours); err != nil {
				t.Fatal(err)
			}
			defer h.routes.Remove(ours)
			for _, line := range tc.msgs {
				msg, err := jsonrpc.Decode([]byte(line))
				if err != nil {
					t.Fatal(err)
				}
				want := answerText(mcpgoAnswer(srv, theirs, msg))
				if got := answerText(h.serve(t.Context(), ours, msg)); got != want {
					t.Errorf("%s\n got %s\nwant %s", line, got, want)
				}
			}
			got, want := (&Session{sess: ours}).State(), (&Session{sess: theirs}).State()
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) || ours.Initialized() != theirs.Initialized() {
				t.Errorf("session state %s (initialized %v), want %s (initialized %v)", gotJSON, ours.Initialized(), wantJSON, theirs.Initialized())
			}
		})
	}
}

// A second session with an open session's id is refused, as mcp-go's
// registry refused it; once that session ends the id is free again.
func TestSessionIDsAreUnique(t *testing.T) {
	t.Parallel()
	h := newTestHub(config.ModeDynamic)
	defer h.mgr.Close()
	a, err := h.Open("x", "stdio", &recordingPeer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Open("x", "stdio", &recordingPeer{}); err == nil || !strings.Contains(err.Error(), "session already exists") {
		t.Fatalf("a second session x: %v", err)
	}
	a.Close()
	b, err := h.Open("x", "stdio", &recordingPeer{})
	if err != nil {
		t.Fatalf("x after it ended: %v", err)
	}
	b.Close()
}

// The binary does not link mcp-go's server: the hub answers the protocol
// itself, and mcp-go is there for its types.
func TestNoMCPGoServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "../cmd/dynamic-mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/mark3labs/mcp-go/server" || strings.HasPrefix(pkg, "github.com/mark3labs/mcp-go/server/") {
			t.Errorf("cmd/dynamic-mcp imports %s", pkg)
		}
	}
}
