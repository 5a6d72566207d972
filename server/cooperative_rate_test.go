package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// frozenCoopHub is coopHub whose rate counters never see a token come
// back while the test runs, however slow.
func frozenCoopHub(t *testing.T) *Hub {
	h := coopHub(t, "off", "")
	stopped := time.Now()
	h.rates.Now = func() time.Time { return stopped }
	return h
}

// callerSession is an initialized session over HTTP of the caller the
// face knows as the static token subject: what mcphttp opens for each
// Mcp-Session-Id of that token.
func callerSession(t *testing.T, h *Hub, id, subject string) *Session {
	t.Helper()
	s, err := h.open(id, "streamable-http", "", &identity.Identity{Kind: identity.KindToken, Subject: subject}, &recordingPeer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Request(t.Context(), decodeMsg(t, initializeMsg)); err != nil {
		t.Fatal(err)
	}
	s.Notification(decodeMsg(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return s
}

func decodeMsg(t *testing.T, line string) *jsonrpc.Message {
	t.Helper()
	msg, err := jsonrpc.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// coopAnswer is the answer of s to the cooperative tool name called with
// args, as the face would write it: the result, or the error.
func coopAnswer(t *testing.T, s *Session, id int, name string, args any) string {
	t.Helper()
	res, err := s.Request(t.Context(), decodeMsg(t, toolCall(id, name, args)))
	if err != nil {
		return "error: " + err.Error()
	}
	return string(res)
}

// The seed's limits count per caller: the sessions of one caller the
// face knows (a token's, over HTTP) share one budget of requestPermission's
// 10 calls a minute, another caller has its own; a stdio session, whose
// caller is the session, has its own too.
func TestCooperativeRatePerCaller(t *testing.T) {
	t.Parallel()
	h := frozenCoopHub(t)
	a1, a2, b := callerSession(t, h, "a-1", "a"), callerSession(t, h, "a-2", "a"), callerSession(t, h, "b-1", "b")
	ask := map[string]any{"resource": "x", "operation": "read", "justification": "j", "tool": "f__sleep"}
	for i := 1; i <= 10; i++ {
		s := a1
		if i%2 == 0 {
			s = a2
		}
		if got := coopAnswer(t, s, i, "requestPermission", ask); strings.HasPrefix(got, "error") {
			t.Fatalf("a's call %d: %s", i, got)
		}
	}
	for i, s := range []*Session{a1, a2} {
		if got := coopAnswer(t, s, 11+i, "requestPermission", ask); !strings.Contains(got, "10 calls a minute per caller") {
			t.Errorf("a's 11th call, in its session %d: %s", i+1, got)
		}
	}
	if got := coopAnswer(t, b, 1, "requestPermission", ask); strings.HasPrefix(got, "error") {
		t.Errorf("another caller's first call: %s", got)
	}
	c := rateSession(t, h, "stdio-1", "", "{}")
	for i := 1; i <= 10; i++ {
		c.send(toolCall(i, "requestPermission", ask))
		if got := c.answer(fmt.Sprint(i)); strings.Contains(got, `"error"`) {
			t.Fatalf("the stdio session's call %d: %s", i, got)
		}
	}
}

// checkIntent's 101st call in a minute and reportAction's 1,001st are
// answered -32000, as the seed says.
func TestCooperativeSeedLimits(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	h := frozenCoopHub(t)
	for _, tc := range []struct {
		tool  string
		calls int
		args  map[string]any
	}{
		{"checkIntent", 100, map[string]any{"description": "d", "action_type": "other", "target": "t", "tool": "f__echo"}},
		{"reportAction", 1000, map[string]any{"description": "d", "action_type": "other", "target": "t", "result": "success"}},
	} {
		c := rateSession(t, h, tc.tool, "", "{}")
		for i := 1; i <= tc.calls; i++ {
			c.send(toolCall(i, tc.tool, tc.args))
			if got := c.answer(fmt.Sprint(i)); strings.Contains(got, `"error"`) || strings.Contains(got, `"isError":true`) {
				t.Fatalf("%s call %d: %s", tc.tool, i, got)
			}
		}
		c.send(toolCall(tc.calls+1, tc.tool, tc.args))
		want := fmt.Sprintf("%d calls a minute per caller", tc.calls)
		if got := c.answer(fmt.Sprint(tc.calls + 1)); !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, want) {
			t.Errorf("%s call %d: %s", tc.tool, tc.calls+1, got)
		}
	}
}
