package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Tasks (protocol 2025-11-25): a task-augmented tools/call passes through
// to the upstream, whose task id the hub replaces by one of its own: the
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

// taskRoute is where a task the hub handed out lives.
type taskRoute struct {
	server *upstream.Server
	conn   upstream.ConnID // the connection the task was made on
	id     json.RawMessage // the upstream's task id, as it wrote it
	sess   *session
}

// taskKey is an upstream's task on one connection.
type taskKey struct {
	conn upstream.ConnID
	id   string // as the upstream wrote it
}

// relatedTaskKey is the _meta key that ties a message to a task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// adoptTask records the task a task-augmented call created on the
// connection conn and gives it the hub's id in the result; a result
// without a task passes unchanged.
func (h *Hub) adoptTask(req *request, s *upstream.Server, conn upstream.ConnID, res json.RawMessage) json.RawMessage {
	task := jsonrpc.Field(res, "task")
	id := jsonrpc.Field(task, "taskId")
	if len(id) == 0 || len(id) > maxTaskID || conn == 0 {
		return res
	}
	hubID := h.newTask(&taskRoute{server: s, conn: conn, id: bytes.Clone(id), sess: req.sess})
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
func (h *Hub) newTask(r *taskRoute) json.RawMessage {
	rt := h.routes
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var hubID string
	for hubID == "" || rt.tasks[hubID] != nil {
		hubID = r.server.Config.ID() + "~" + rand.Text()
	}
	key := taskKey{r.conn, string(r.id)}
	if old, ok := rt.taskKeys[key]; ok {
		delete(rt.tasks, old)
	}
	rt.tasks[hubID] = r
	rt.taskKeys[key] = hubID
	if r.sess != nil {
		r.sess.tasks = append(r.sess.tasks, hubID)
		if len(r.sess.tasks) > maxSessionTasks {
			rt.forgetTask(r.sess.tasks[0])
			r.sess.tasks = slices.Delete(r.sess.tasks, 0, 1)
		}
	}
	q, _ := jsonrpc.Marshal(hubID)
	return q
}

// task finds the session's task the request names.
func (h *Hub) task(req *request) (string, *taskRoute, error) {
	id := req.field("taskId")
	var hubID string
	if json.Unmarshal(id, &hubID) != nil {
		return "", nil, errorf(codeInvalidParams, fmt.Sprintf("Task not found: %s", id))
	}
	h.routes.mu.Lock()
	r := h.routes.tasks[hubID]
	h.routes.mu.Unlock()
	if r == nil || r.sess != req.sess {
		return "", nil, errorf(codeInvalidParams, fmt.Sprintf("Task not found: %s", id))
	}
	return hubID, r, nil
}

// taskRequest routes tasks/get, tasks/result or tasks/cancel to the
// connection the task was made on, and gives what it answers the hub's
// id. A task whose connection ended is not found.
func (h *Hub) taskRequest(ctx context.Context, req *request) (json.RawMessage, error) {
	hubID, r, err := h.task(req)
	if err != nil {
		return nil, err
	}
	up, err := req.params.With(jsonrpc.Member{Key: "taskId", Value: r.id})
	if err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
	}
	quoted, _ := jsonrpc.Marshal(hubID)
	res, _, err := h.requestOn(ctx, req, req.sess, r.server, r.conn, req.msg.Method, json.RawMessage(up), req.snap.cfg.CallTimeoutFor(r.server.Config))
	if errors.Is(err, upstream.ErrConnGone) {
		h.forgetTask(hubID)
		return nil, errorf(codeInvalidParams, fmt.Sprintf("Task not found: %s (its server %s restarted since it was made)", quoted, r.server.Config.ID()))
	}
	if err != nil {
		return nil, err
	}
	return retask(res, r.id, quoted), nil
}

// tasksList answers tasks/list with the session's tasks, from every
// upstream that lists tasks.
func (h *Hub) tasksList(ctx context.Context, req *request) (json.RawMessage, error) {
	var servers []*upstream.Server
	seen := map[*upstream.Server]bool{}
	h.routes.mu.Lock()
	for _, r := range h.routes.tasks {
		if r.sess == req.sess && !seen[r.server] {
			seen[r.server] = true
			servers = append(servers, r.server)
		}
	}
	h.routes.mu.Unlock()
	var tasks []json.RawMessage
	timeout := req.snap.cfg.Settings.ListTimeout
	for _, s := range servers {
		res, conn, err := h.requestOn(ctx, req, req.sess, s, 0, "tasks/list", nil, timeout)
		if err != nil {
			h.logger.Debug("tasks/list upstream", "upstream", s.Config.ID(), "err", err)
			continue
		}
		var page struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		_ = json.Unmarshal(res, &page)
		for _, t := range page.Tasks {
			hubID, ok := h.ownTask(req.sess, taskKey{conn, string(jsonrpc.Field(t, "taskId"))})
			if !ok {
				continue // another session's, or no one's
			}
			q, _ := jsonrpc.Marshal(hubID)
			if t, err := jsonrpc.SetField(t, "taskId", q); err == nil {
				tasks = append(tasks, t)
			}
		}
	}
	return views.ListResult("tasks", tasks, ""), nil
}

// ownTask is the hub's id of the upstream task key names, when sess owns
// it.
func (h *Hub) ownTask(sess *session, key taskKey) (string, bool) {
	h.routes.mu.Lock()
	defer h.routes.mu.Unlock()
	hubID, ok := h.routes.taskKeys[key]
	if !ok || h.routes.tasks[hubID].sess != sess {
		return "", false
	}
	return hubID, true
}

// taskStatus passes an upstream's notifications/tasks/status, which came
// on the connection ctx names (see upstream.ConnOf), to the session that
// owns the task, with the hub's id.
func (h *Hub) taskStatus(ctx context.Context, s *upstream.Server, params json.RawMessage) {
	id := jsonrpc.Field(params, "taskId")
	key := taskKey{upstream.ConnOf(ctx), string(id)}
	h.routes.mu.Lock()
	var owner *session
	hubID, ok := h.routes.taskKeys[key]
	if r := h.routes.tasks[hubID]; ok && r != nil && r.server == s {
		owner = r.sess
	}
	h.routes.mu.Unlock()
	if owner == nil {
		h.logger.Debug("task status for no task of a client", "upstream", s.Config.ID(), "task", string(id))
		return
	}
	q, _ := jsonrpc.Marshal(hubID)
	if p, err := jsonrpc.SetField(params, "taskId", q); err == nil {
		owner.notify(context.Background(), "notifications/tasks/status", p)
	}
}

// forgetTask drops one task.
func (h *Hub) forgetTask(hubID string) {
	r := h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tasks[hubID]; t != nil {
		delete(r.tasks, hubID)
		delete(r.taskKeys, taskKey{t.conn, string(t.id)})
	}
}

// forgetTasks drops the tasks of a session that ended.
func (r *routes) forgetTasks(sess *session) {
	for _, id := range sess.tasks {
		r.forgetTask(id)
	}
	sess.tasks = nil
}

// forgetTask drops the route of the task with the hub's id (gone already:
// nothing to do).
func (r *routes) forgetTask(id string) {
	if t := r.tasks[id]; t != nil {
		delete(r.tasks, id)
		if r.taskKeys[taskKey{t.conn, string(t.id)}] == id {
			delete(r.taskKeys, taskKey{t.conn, string(t.id)})
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
