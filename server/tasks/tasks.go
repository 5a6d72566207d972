// Package tasks keeps the tasks (protocol 2025-11-25) the hub hands out
// to its client sessions: a task-augmented tools/call passes through to
// the upstream, whose task id the hub replaces by one of its own: the
// server's name and a random nonce, so that no two tasks the hub hands out
// share an id, whichever session made them, however often an upstream
// (per session or shared, restarted or not) numbers its tasks from 1 again.
// An upstream's task id means something only on the connection it was
// made on, so the hub keeps each task by its id and by (connection,
// upstream id): tasks/get, tasks/result and tasks/cancel go to that
// connection only (after a restart the task is gone, whatever the new
// process calls by its id), notifications/tasks/status reach the session
// that owns the task on the connection it came on, and tasks/list answers
// with the session's own tasks only.
package tasks

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Session is the hub's session as the table keeps it: comparable (its
// zero value is no session), and Gone, closed once it ended.
type Session interface {
	comparable
	Gone() <-chan struct{}
}

// Table is the tasks the hub handed out, each to a session of type S (the
// hub's; its zero value is no session).
type Table[S Session] struct {
	logger *slog.Logger
	mu     sync.Mutex           // guards the maps
	tasks  map[string]*route[S] // by the hub's task id
	keys   map[key]string       // the hub's task id by the upstream's, on its connection
	owned  map[S][]string       // the hub's ids of each session's tasks, oldest first
}

// New returns an empty table that logs to logger.
func New[S Session](logger *slog.Logger) *Table[S] {
	return &Table[S]{logger: logger, tasks: map[string]*route[S]{}, keys: map[key]string{}, owned: map[S][]string{}}
}

// route is where a task the hub handed out lives.
type route[S Session] struct {
	server call.Upstream
	conn   upstream.ConnID // the connection the task was made on
	id     json.RawMessage // the upstream's task id, as it wrote it
	sess   S
}

// key is an upstream's task on one connection.
type key struct {
	conn upstream.ConnID
	id   string // as the upstream wrote it
}

// Send sends a request of a session's about its tasks to s, on the
// connection on (zero: any), and returns the answer and the connection it
// went on.
type Send func(s call.Upstream, on upstream.ConnID, method string, params json.RawMessage) (json.RawMessage, upstream.ConnID, error)

// relatedTaskKey is the _meta key that ties a message to a task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// Adopt records the task a task-augmented call of sess created on the
// connection conn and gives it the hub's id in the result; a result
// without a task passes unchanged.
func (t *Table[S]) Adopt(sess S, s call.Upstream, conn upstream.ConnID, res json.RawMessage) json.RawMessage {
	task := jsonrpc.Field(res, "task")
	id := jsonrpc.Field(task, "taskId")
	if len(id) == 0 || len(id) > maxTaskID || conn == 0 {
		return res
	}
	hubID := t.newTask(&route[S]{server: s, conn: conn, id: bytes.Clone(id), sess: sess})
	if hubID == nil {
		return res // its session ended: no one to route the task to
	}
	task, err := jsonrpc.SetField(task, "taskId", hubID)
	if err != nil {
		return res
	}
	if out, err := jsonrpc.SetField(res, "task", task); err == nil {
		return out
	}
	return res
}

// A session's task routes are kept for its maxSessionTasks most recent
// tasks (a finished task is never announced as such, so the routes of a
// long session would grow for its whole life); an older one is forgotten
// and answered as not found. An upstream's task id over maxTaskID bytes
// is not adopted: the result passes with the upstream's own id.
const (
	maxSessionTasks = 1000
	maxTaskID       = 1024
)

// newTask records r under a new id of the hub's, <server>~<nonce>, and
// returns that id. The upstream's id on r's connection names r from now
// on: a task the connection numbered so before is forgotten (an upstream
// that reuses an id on one connection has ended the task that had it).
// A session that ended (its Gone closed, as the hub's is before the
// table forgets it) gets nothing, nil: its call's answer may come after
// ForgetSession, which would leave the route, and the session in owned,
// for the hub's life.
func (t *Table[S]) newTask(r *route[S]) json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-r.sess.Gone():
		return nil
	default:
	}
	var hubID string
	for hubID == "" || t.tasks[hubID] != nil {
		hubID = r.server.ServerConfig().ID() + "~" + rand.Text()
	}
	k := key{r.conn, string(r.id)}
	if old, ok := t.keys[k]; ok {
		delete(t.tasks, old)
	}
	t.tasks[hubID] = r
	t.keys[k] = hubID
	var none S
	if r.sess != none {
		own := append(t.owned[r.sess], hubID)
		if len(own) > maxSessionTasks {
			t.forget(own[0])
			own = slices.Delete(own, 0, 1)
		}
		t.owned[r.sess] = own
	}
	q, _ := jsonrpc.Marshal(hubID)
	return q
}

// task finds the session's task that params name.
func (t *Table[S]) task(sess S, params jsonrpc.Object) (string, *route[S], error) {
	id := params.Field("taskId")
	var hubID string
	if json.Unmarshal(id, &hubID) != nil {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Task not found: "+clip.Echo(string(id)))
	}
	t.mu.Lock()
	r := t.tasks[hubID]
	t.mu.Unlock()
	if r == nil || r.sess != sess {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Task not found: "+clip.Echo(string(id)))
	}
	return hubID, r, nil
}

// Request routes sess's tasks/get, tasks/result or tasks/cancel (method,
// with params) to the connection the task was made on, and gives what it
// answers the hub's id. A task whose connection ended is not found.
func (t *Table[S]) Request(sess S, method string, params jsonrpc.Object, send Send) (json.RawMessage, error) {
	hubID, r, err := t.task(sess, params)
	if err != nil {
		return nil, err
	}
	up, err := params.With(jsonrpc.Member{Key: "taskId", Value: r.id})
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	quoted, _ := jsonrpc.Marshal(hubID)
	res, _, err := send(r.server, r.conn, method, json.RawMessage(up))
	if errors.Is(err, upstream.ErrConnGone) {
		t.drop(hubID)
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("Task not found: %s (its server %s restarted since it was made)", quoted, r.server.ServerConfig().ID()))
	}
	if err != nil {
		return nil, err
	}
	return retask(res, r.id, quoted), nil
}

// List is sess's tasks for tasks/list, from every upstream that lists
// tasks.
func (t *Table[S]) List(sess S, send Send) []json.RawMessage {
	var servers []call.Upstream
	seen := map[call.Upstream]bool{}
	t.mu.Lock()
	for _, r := range t.tasks {
		if r.sess == sess && !seen[r.server] {
			seen[r.server] = true
			servers = append(servers, r.server)
		}
	}
	t.mu.Unlock()
	var tasks []json.RawMessage
	for _, s := range servers {
		res, conn, err := send(s, 0, "tasks/list", nil)
		if err != nil {
			t.logger.Debug("tasks/list upstream", "upstream", s.ServerConfig().ID(), "err", err)
			continue
		}
		var page struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		_ = json.Unmarshal(res, &page)
		for _, task := range page.Tasks {
			hubID, ok := t.own(sess, key{conn, string(jsonrpc.Field(task, "taskId"))})
			if !ok {
				continue // another session's, or no one's
			}
			q, _ := jsonrpc.Marshal(hubID)
			if task, err := jsonrpc.SetField(task, "taskId", q); err == nil {
				tasks = append(tasks, task)
			}
		}
	}
	return tasks
}

// own is the hub's id of the upstream task k names, when sess owns it.
func (t *Table[S]) own(sess S, k key) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hubID, ok := t.keys[k]
	if !ok || t.tasks[hubID].sess != sess {
		return "", false
	}
	return hubID, true
}

// Status is where an upstream's notifications/tasks/status, which came
// from s on the connection conn, goes: the session that owns the task,
// and params with the hub's id; ok is false when no session does.
func (t *Table[S]) Status(s *upstream.Server, conn upstream.ConnID, params json.RawMessage) (owner S, out json.RawMessage, ok bool) {
	id := jsonrpc.Field(params, "taskId")
	k := key{conn, string(id)}
	t.mu.Lock()
	hubID, found := t.keys[k]
	if r := t.tasks[hubID]; found && r != nil && r.server == s {
		owner = r.sess
	}
	t.mu.Unlock()
	var none S
	if owner == none {
		t.logger.Debug("task status for no task of a client", "upstream", s.Config.ID(), "task", string(id))
		return none, nil, false
	}
	q, _ := jsonrpc.Marshal(hubID)
	p, err := jsonrpc.SetField(params, "taskId", q)
	return owner, p, err == nil
}

// drop drops one task.
func (t *Table[S]) drop(hubID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.tasks[hubID]; r != nil {
		delete(t.tasks, hubID)
		delete(t.keys, key{r.conn, string(r.id)})
	}
}

// ForgetSession drops the tasks of a session that ended.
func (t *Table[S]) ForgetSession(sess S) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range t.owned[sess] {
		t.forget(id)
	}
	delete(t.owned, sess)
}

// forget drops the route of the task with the hub's id (gone already:
// nothing to do).
func (t *Table[S]) forget(id string) {
	if r := t.tasks[id]; r != nil {
		delete(t.tasks, id)
		if t.keys[key{r.conn, string(r.id)}] == id {
			delete(t.keys, key{r.conn, string(r.id)})
		}
	}
}

// retask gives a task or a task's result the hub's id where it names the
// upstream's: the taskId of a Task, and the related-task of its _meta.
func retask(res, upstreamID, hubID json.RawMessage) json.RawMessage {
	if id := jsonrpc.Field(res, "taskId"); string(id) == string(upstreamID) {
		if out, err := jsonrpc.SetField(res, "taskId", hubID); err == nil {
			res = out
		}
	}
	meta := jsonrpc.Field(res, "_meta")
	related := jsonrpc.Field(meta, relatedTaskKey)
	if id := jsonrpc.Field(related, "taskId"); string(id) == string(upstreamID) {
		if related, err := jsonrpc.SetField(related, "taskId", hubID); err == nil {
			if meta, err := jsonrpc.SetField(meta, relatedTaskKey, related); err == nil {
				if out, err := jsonrpc.SetField(res, "_meta", meta); err == nil {
					res = out
				}
			}
		}
	}
	return res
}
