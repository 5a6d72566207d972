package tasks

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A task an upstream made on a connection is handed out under the hub's
// id; its status goes to the session that owns it, with that id; tasks/get
// goes to its connection with the upstream's id and comes back with the
// hub's; another session, or another server's status, finds nothing; a
// connection gone takes its task with it.
func TestTaskAdoptedRoutedAndRenamed(t *testing.T) {
	tab := New[name](slog.New(slog.DiscardHandler))
	srv := &upstream.Server{Config: &config.Server{Group: "g", Name: "s"}}
	other := &upstream.Server{Config: &config.Server{Group: "g", Name: "o"}}
	res := tab.Adopt("a", srv, 7, json.RawMessage(`{"task":{"taskId":"1","status":"working"}}`))
	var hubID string
	if err := json.Unmarshal(jsonrpc.Field(jsonrpc.Field(res, "task"), "taskId"), &hubID); err != nil || !strings.HasPrefix(hubID, "g/s~") {
		t.Fatalf("adopted: %s", res)
	}
	quoted, _ := jsonrpc.Marshal(hubID)

	if owner, p, ok := tab.Status(srv, 7, json.RawMessage(`{"taskId":"1","status":"completed"}`)); !ok || owner != "a" || string(jsonrpc.Field(p, "taskId")) != string(quoted) {
		t.Errorf("status: %q %s %v", owner, p, ok)
	}
	if _, _, ok := tab.Status(other, 7, json.RawMessage(`{"taskId":"1"}`)); ok {
		t.Error("another server's status reached the session")
	}

	params, _ := jsonrpc.ScanObject(json.RawMessage(`{"taskId":` + string(quoted) + `}`))
	send := func(s call.Upstream, on upstream.ConnID, method string, p json.RawMessage) (json.RawMessage, upstream.ConnID, error) {
		if s != srv || on != 7 || method != "tasks/get" || string(jsonrpc.Field(p, "taskId")) != `"1"` {
			t.Errorf("sent %s on %d to %s: %s", method, on, s.ServerConfig().ID(), p)
		}
		return json.RawMessage(`{"taskId":"1","status":"completed","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"}}}`), on, nil
	}
	got, err := tab.Request("a", "tasks/get", params, send)
	if err != nil || strings.Contains(string(got), `"1"`) || strings.Count(string(got), string(quoted)) != 2 {
		t.Errorf("tasks/get: %s, %v", got, err)
	}
	if _, err := tab.Request("b", "tasks/get", params, send); jsonrpc.ToError(err).Code != jsonrpc.CodeInvalidParams {
		t.Errorf("another session's task: %v", err)
	}

	gone := func(call.Upstream, upstream.ConnID, string, json.RawMessage) (json.RawMessage, upstream.ConnID, error) {
		return nil, 0, upstream.ErrConnGone
	}
	if _, err := tab.Request("a", "tasks/get", params, gone); err == nil || !strings.Contains(err.Error(), "restarted") {
		t.Errorf("task of a connection gone: %v", err)
	}
	if _, err := tab.Request("a", "tasks/get", params, send); err == nil {
		t.Error("a task of a connection gone is still found")
	}
}

// A session keeps the routes of its maxSessionTasks most recent tasks:
// tasks that are never announced as finished cannot grow the hub for the
// session's life, and a session's end walks only its own tasks.
func TestTaskRoutesBoundedPerSession(t *testing.T) {
	rt := New[name](slog.New(slog.DiscardHandler))
	srv := &upstream.Server{Config: &config.Server{Group: "f", Name: "f"}}
	a, b := name("a"), name("b")
	first := rt.newTask(&route[name]{server: srv, conn: 1, id: json.RawMessage(`"b0"`), sess: b})
	var ids []json.RawMessage
	for i := range maxSessionTasks + 5 {
		ids = append(ids, rt.newTask(&route[name]{server: srv, conn: 1, id: json.RawMessage(fmt.Sprintf(`"t%d"`, i)), sess: a}))
	}
	rt.mu.Lock()
	if n := len(rt.tasks); n != maxSessionTasks+1 {
		t.Errorf("%d task routes kept, want %d (a's newest and b's one)", n, maxSessionTasks+1)
	}
	if n := len(rt.keys); n != maxSessionTasks+1 {
		t.Errorf("%d task keys kept, want %d", n, maxSessionTasks+1)
	}
	for _, id := range ids[:5] {
		var hubID string
		_ = json.Unmarshal(id, &hubID)
		if rt.tasks[hubID] != nil {
			t.Errorf("a's old task %s still routed", hubID)
		}
	}
	var bID string
	_ = json.Unmarshal(first, &bID)
	if rt.tasks[bID] == nil {
		t.Error("b's task was dropped for a's")
	}
	rt.mu.Unlock()
	rt.ForgetSession(a)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if n := len(rt.tasks); n != 1 {
		t.Errorf("%d task routes after a ended, want b's 1", n)
	}
}

// endedSession is a session as the hub's has it: Gone is closed at its end.
// name is a session of the tests that never ends.
type name string

func (name) Gone() <-chan struct{} { return nil }

type endedSession struct{ gone chan struct{} }

func (s *endedSession) Gone() <-chan struct{} { return s.gone }

// A task-augmented call whose answer comes after its session ended (the
// session's end and the answer race) leaves nothing behind: the table
// forgot the session already, and would keep the task's route, and the
// session in its map of owners, for the hub's life.
func TestTaskOfEndedSessionNotKept(t *testing.T) {
	tab := New[*endedSession](slog.New(slog.DiscardHandler))
	srv := &upstream.Server{Config: &config.Server{Group: "g", Name: "s"}}
	sess := &endedSession{gone: make(chan struct{})}
	close(sess.gone) // ended (the hub's Remove ends a session, then forgets its tasks)
	tab.ForgetSession(sess)
	res := json.RawMessage(`{"task":{"taskId":"1","status":"working"}}`)
	if got := tab.Adopt(sess, srv, 7, res); string(got) != string(res) {
		t.Errorf("adopted for an ended session: %s", got)
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.tasks) != 0 || len(tab.keys) != 0 || len(tab.owned) != 0 {
		t.Errorf("kept for an ended session: %d routes, %d keys, %d owners", len(tab.tasks), len(tab.keys), len(tab.owned))
	}
}
