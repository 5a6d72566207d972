package inspect

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// The inspector never shows a session's id, which lets whoever holds it
// address the session (issue 20, finding 1): the clients, the rows live
// and in the history, and the export carry a short label of it, the same
// everywhere, so that rows are still told apart by session.
func TestInspectorNeverShowsASessionID(t *testing.T) {
	const id = "5f0c2a9e6b1d4c37a8e2f19b0d7c6e45"
	i := New(Options{Clients: func() []Client {
		return []Client{{ID: id, Transport: "streamable-http"}, {ID: "stdio", Transport: "stdio"}}
	}})
	defer i.Close()
	srv := httptest.NewServer(i.API())
	defer srv.Close()
	events, stop := openEvents(t, srv.URL)
	defer stop()
	c := &traffic.Call{Session: id, Transport: "streamable-http", ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{}`), Start: time.Now()}
	ctx := i.CallStarted(context.Background(), c)
	i.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Session: id, Server: "s", Method: "notifications/progress"})
	c.Status = traffic.StatusOK
	i.CallEnded(ctx, c)
	i.Message(context.Background(), &traffic.Message{Direction: traffic.FromUpstream, Session: id, Server: "s", Method: "notifications/message"})

	label := sessionLabel(id)
	if len(label) != 8 {
		t.Fatalf("label %q", label)
	}
	var seen strings.Builder
	for ev := nextEvent(t, events); ; ev = nextEvent(t, events) {
		seen.Write(ev.data)
		if ev.name == evRow && strings.Contains(string(ev.data), "notifications/message") {
			break // the last thing recorded
		}
	}
	for _, path := range []string{"api/clients", "api/export"} {
		resp, err := http.Get(srv.URL + Prefix + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen.WriteString(string(b))
		if !strings.Contains(string(b), `"`+label+`"`) {
			t.Errorf("%s does not name the session by its label %s: %.300s", path, label, b)
		}
	}
	if strings.Contains(seen.String(), id) || strings.Contains(seen.String(), id[:16]) {
		t.Errorf("the session's id is shown: %.600s", seen.String())
	}
	if !strings.Contains(seen.String(), `"stdio"`) {
		t.Error("the stdio session is not shown as stdio")
	}
}
