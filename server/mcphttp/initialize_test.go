package mcphttp

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// Only an initialize answered with its result leaves a session: one the
// hub answers with an error (its params wrong) is told no session id and
// leaves none, in the face or the hub, and an initialize sent as a
// notification (no id) makes none; neither waits for the idle sweep.
func TestHTTPInitializeLeavesSessionOnlyWhenAnswered(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	hs, ts := serveHTTP(t, h)
	url := ts.URL + "/mcp"

	code, session, body := call(t, http.MethodPost, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}`)
	if code != http.StatusOK || !strings.Contains(body, `"error"`) || session != "" {
		t.Errorf("initialize with bad params: %d, session %q, %s", code, session, body)
	}
	await.For(t, 10*time.Second, "the failed initialize's session to end", func() bool { return sessionCount(hs) == 0 && hubSessions(h) == 0 })

	code, session, body = call(t, http.MethodPost, url, "", "", `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != http.StatusAccepted || session != "" {
		t.Errorf("initialize as a notification: %d, session %q, %s", code, session, body)
	}
	if n, m := sessionCount(hs), hubSessions(h); n != 0 || m != 0 {
		t.Errorf("initialize as a notification left %d sessions in the face, %d in the hub", n, m)
	}

	// The check sees sessions: an initialize answered leaves one.
	if code, session, body = call(t, http.MethodPost, url, "", "", initializeMsg); code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q, %s", code, session, body)
	}
	if n, m := sessionCount(hs), hubSessions(h); n != 1 || m != 1 {
		t.Errorf("an initialize answered left %d sessions in the face, %d in the hub; want 1", n, m)
	}
}
