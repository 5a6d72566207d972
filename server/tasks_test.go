package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// taskHub runs a flat hub in front of the fake upstream "f" run with
// -tasks (and more of the group's keys), and a client that has initialized
// for each name.
func taskHub(t *testing.T, group string, names ...string) (*Hub, *upstream.Manager, map[string]*toolClient) {
	t.Helper()
	h, mgr := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s", "    args: [\"-tasks\"]\n"+group), true)
	await.For(t, 10*time.Second, "the upstream", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__announce"]; return ok })
	clients := map[string]*toolClient{}
	for _, n := range names {
		c := &toolClient{pipeClient: sessionPipes(t, h, n)}
		c.initialize()
		clients[n] = c
	}
	return h, mgr, clients
}

// sessionPipes is a client over pipes of a session with the id given, as
// ServeStdio serves one (whose sessions are all "stdio": one at a time).
func sessionPipes(t *testing.T, h *Hub, id string) *pipeClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	maxSize := h.Settings().MaxMessageSize
	var sess *Session
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(inR, outW, maxSize), jsonrpc.ConnOptions{
		MaxMessageSize: maxSize,
		Handle:         func(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) { return sess.Request(ctx, m) },
		Notify:         func(m *jsonrpc.Message) { sess.Notification(m) },
	})
	sess, err := h.Open(id, "test", &connPeer{conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	conn.Start()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		conn.Close()
		sess.Close()
	})
	return &pipeClient{t: t, w: inW, r: bufio.NewReaderSize(outR, 1<<20), pr: outR}
}

// startTask has c make a task of the echo tool with text, and returns the
// task id it was given.
func startTask(t *testing.T, c *toolClient, text string) string {
	t.Helper()
	line := c.ask("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": text}, "task": map[string]any{"ttl": 60000}})
	var m struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(line), &m) != nil || !strings.HasPrefix(m.Result.Task.TaskID, "f~") {
		t.Fatalf("a task of %s: %s", text, line)
	}
	return m.Result.Task.TaskID
}

// statuses has c call announce, on which its upstream connection sends
// notifications/tasks/status for every task it made, and returns the task
// ids of the status notifications c received up to the answer (a call's
// notifications reach its client before its answer).
func statuses(t *testing.T, c *toolClient) []string {
	t.Helper()
	c.id++
	id := c.id
	c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"f__announce","arguments":{}}}`)
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(c.answerAll(itoa(id))), "\n") {
		var m struct {
			Method string `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "notifications/tasks/status" {
			ids = append(ids, m.Params.TaskID)
		}
	}
	return ids
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// With isolation: per-session each session's own process numbers its
// tasks from 1: the hub still gives the two sessions' tasks different ids,
// each session reaches its own task (and finds it alone in tasks/list),
// and each receives the status of its own task only: 1 notification each,
// not 2 to one and 0 to the other.
func TestTaskIDsPerSessionUniqueAndOwned(t *testing.T) {
	t.Parallel()
	_, _, c := taskHub(t, "    isolation: per-session\n", "a", "b")
	idA, idB := startTask(t, c["a"], "A"), startTask(t, c["b"], "B")
	if idA == idB {
		t.Errorf("both sessions' tasks are %s", idA)
	}
	for n, want := range map[string]string{"a": idA, "b": idB} {
		other := map[string]string{"a": "B", "b": "A"}[n]
		res := c[n].ask("tasks/result", map[string]any{"taskId": want})
		if !strings.Contains(res, `task result: `+strings.ToUpper(n)) {
			t.Errorf("session %s's tasks/result %s: %s", n, want, res)
		}
		if !strings.Contains(res, `"taskId":"`+want+`"`) {
			t.Errorf("session %s's result does not name its task %s: %s", n, want, res)
		}
		if strings.Contains(res, "task result: "+other) {
			t.Errorf("session %s read the other session's result: %s", n, res)
		}
		if list := c[n].ask("tasks/list", map[string]any{}); strings.Count(list, `"taskId"`) != 1 || !strings.Contains(list, `"taskId":"`+want+`"`) {
			t.Errorf("session %s's tasks/list, want %s alone: %s", n, want, list)
		}
	}
	gotB := statuses(t, c["b"])
	gotA := statuses(t, c["a"])
	if len(gotA) != 1 || gotA[0] != idA {
		t.Errorf("session a received the status of tasks %q, want of its own %s once", gotA, idA)
	}
	if len(gotB) != 1 || gotB[0] != idB {
		t.Errorf("session b received the status of tasks %q, want of its own %s once", gotB, idB)
	}
}

// A shared upstream that restarts numbers its tasks from 1 again: session
// b's task on the new process does not answer for session a's task made on
// the old one. a's tasks/result is refused (-32602, not found: its server
// restarted since) without reaching the new process, b's is b's.
func TestTaskOfARestartedUpstreamNotAnother(t *testing.T) {
	t.Parallel()
	h, mgr, c := taskHub(t, "", "a", "b")
	s := mgr.Servers()[0]
	idA := startTask(t, c["a"], "A")
	c["a"].ask("tools/call", map[string]any{"name": "f__crash", "arguments": map[string]any{}})
	await.For(t, 20*time.Second, "the upstream to restart", func() bool {
		_, ok := h.snapshot().view.FlatRoutes["f__echo"]
		return s.Restarts() >= 1 && s.Status().State == upstream.StateReady && ok
	})
	idB := startTask(t, c["b"], "B")
	if idA == idB {
		t.Errorf("both sessions' tasks are %s", idA)
	}
	res := c["a"].ask("tasks/result", map[string]any{"taskId": idA})
	if strings.Contains(res, "task result: B") || !strings.Contains(res, `"code":-32602`) || !strings.Contains(res, "restarted since") {
		t.Errorf("session a's task after the restart: %s", res)
	}
	if res := c["b"].ask("tasks/result", map[string]any{"taskId": idB}); !strings.Contains(res, "task result: B") {
		t.Errorf("session b's task: %s", res)
	}
	if got := statuses(t, c["a"]); len(got) != 0 {
		t.Errorf("session a received the status of tasks %q, none of them its own", got)
	}
}

// A task belongs to the session that made it: another session of the
// same hub that names its id (learned however) gets the answer an unknown
// id gets on tasks/get, tasks/result and tasks/cancel, and the owner's
// task is neither read nor cancelled by it. (The ids are nonces, so
// TestTaskIDsPerSessionUniqueAndOwned never names another's.)
func TestTaskOfAnotherSessionNotFound(t *testing.T) {
	t.Parallel()
	_, _, c := taskHub(t, "", "a", "b")
	idA := startTask(t, c["a"], "A")
	const unknown = "f~unknown"
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		want := strings.ReplaceAll(c["b"].ask(method, map[string]any{"taskId": unknown}), unknown, idA)
		got := c["b"].ask(method, map[string]any{"taskId": idA})
		if !strings.Contains(got, `"code":-32602`) || stripID(got) != stripID(want) {
			t.Errorf("b's %s of a's task %s: %s; want as for an unknown id: %s", method, idA, got, want)
		}
	}
	if res := c["a"].ask("tasks/result", map[string]any{"taskId": idA}); !strings.Contains(res, "task result: A") {
		t.Errorf("a's task after b's tries: %s", res)
	}
}

// stripID is an answer without its id, which differs between requests.
func stripID(line string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return line
	}
	delete(m, "id")
	b, _ := json.Marshal(m)
	return string(b)
}

// A task-augmented call of a 2026-07-28 request without a session
// (Hub.Answer) gets the hub's task id, as a session's call does: the
// request's own client, listed nowhere, is the call's (routes.Table.Of).
func TestTaskOfASessionlessCallHasTheHubsID(t *testing.T) {
	t.Parallel()
	h, _, _ := taskHub(t, "")
	msg, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"},"task":{"ttl":60000},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Answer(t.Context(), SessionOptions{ID: "one-request", Transport: "streamable-http", Peer: &recordingPeer{}}, msg)
	if id := string(jsonrpc.Field(jsonrpc.Field(res, "task"), "taskId")); err != nil || !strings.HasPrefix(id, `"f~`) {
		t.Errorf("a sessionless task: %s, %v; want the hub's id f~...", res, err)
	}
	if n := len(h.Sessions().Info()); n != 0 {
		t.Errorf("the hub lists %d sessions after a sessionless call, want none", n)
	}
}
