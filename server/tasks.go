package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Tasks (protocol 2025-11-25): a task-augmented tools/call passes through
// to the upstream, whose task id the hub replaces by one of its own, unique
// across upstreams; tasks/get, tasks/result, tasks/cancel and
// notifications/tasks/status are routed by that id to the upstream and the
// session that own the task, and tasks/list answers with the session's own
// tasks only (upstreams are shared by every client of the hub).

// taskRoute is where a task the hub handed out lives.
type taskRoute struct {
	server *upstream.Server
	id     json.RawMessage // the upstream's task id, as it wrote it
	sess   *session
}

// relatedTaskKey is the _meta key that ties a message to a task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// adoptTask records the task a task-augmented call created and gives it
// the hub's id in the result; a result without a task passes unchanged.
func (h *Hub) adoptTask(req *request, s *upstream.Server, res json.RawMessage) json.RawMessage {
	task := jsonrpc.Field(res, "task")
	id := jsonrpc.Field(task, "taskId")
	if len(id) == 0 {
		return res
	}
	hubID := h.taskID(s, id, req.sess)
	task, err := jsonrpc.SetField(task, "taskId", hubID)
	if err != nil {
		return res
	}
	if out, err := jsonrpc.SetField(res, "task", task); err == nil {
		return out
	}
	return res
}

// taskID is the hub's id of s's task id, made for sess when new.
func (h *Hub) taskID(s *upstream.Server, id json.RawMessage, sess *session) json.RawMessage {
	hubID := hubTaskID(s, id)
	r := h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tasks[string(hubID)]; !ok {
		r.tasks[string(hubID)] = &taskRoute{server: s, id: id, sess: sess}
	}
	return hubID
}

// hubTaskID is the id the hub gives s's task id: <server>~<id>.
func hubTaskID(s *upstream.Server, id json.RawMessage) json.RawMessage {
	var text string
	if json.Unmarshal(id, &text) != nil {
		text = string(id)
	}
	hubID, _ := jsonrpc.Marshal(s.Config.ID() + "~" + text)
	return hubID
}

// task finds the session's task the request names.
func (h *Hub) task(req *request) (string, *taskRoute, error) {
	id := req.field("taskId")
	h.routes.mu.Lock()
	r := h.routes.tasks[string(id)]
	h.routes.mu.Unlock()
	if r == nil || r.sess != req.sess {
		return "", nil, errorf(codeInvalidParams, fmt.Sprintf("Task not found: %s", id))
	}
	return string(id), r, nil
}

// taskRequest routes tasks/get, tasks/result or tasks/cancel to the
// upstream that owns the task, and gives what it answers the hub's id.
func (h *Hub) taskRequest(ctx context.Context, req *request) (json.RawMessage, error) {
	hubID, r, err := h.task(req)
	if err != nil {
		return nil, err
	}
	up, err := req.params.With(jsonrpc.Member{Key: "taskId", Value: r.id})
	if err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
	}
	res, err := h.request(ctx, req, r.server, req.msg.Method, json.RawMessage(up), req.snap.cfg.CallTimeoutFor(r.server.Config))
	if err != nil {
		return nil, err
	}
	return retask(res, r.id, json.RawMessage(hubID)), nil
}

// tasksList answers tasks/list with the session's tasks, from every
// upstream that lists tasks.
func (h *Hub) tasksList(ctx context.Context, req *request) (json.RawMessage, error) {
	owned := map[*upstream.Server]map[string]string{} // server -> its task id -> hub id
	h.routes.mu.Lock()
	for hubID, r := range h.routes.tasks {
		if r.sess == req.sess {
			if owned[r.server] == nil {
				owned[r.server] = map[string]string{}
			}
			owned[r.server][string(r.id)] = hubID
		}
	}
	h.routes.mu.Unlock()
	var tasks []json.RawMessage
	timeout := req.snap.cfg.Settings.ListTimeout
	for s, ids := range owned {
		res, err := h.request(ctx, req, s, "tasks/list", nil, timeout)
		if err != nil {
			h.logger.Debug("tasks/list upstream", "upstream", s.Config.ID(), "err", err)
			continue
		}
		var page struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		_ = json.Unmarshal(res, &page)
		for _, t := range page.Tasks {
			if hubID, ok := ids[string(jsonrpc.Field(t, "taskId"))]; ok {
				if t, err := jsonrpc.SetField(t, "taskId", json.RawMessage(hubID)); err == nil {
					tasks = append(tasks, t)
				}
			}
		}
	}
	return listResult("tasks", tasks, ""), nil
}

// taskStatus passes an upstream's notifications/tasks/status to the
// session that owns the task, with the hub's id.
func (h *Hub) taskStatus(s *upstream.Server, params json.RawMessage) {
	id := jsonrpc.Field(params, "taskId")
	hubID := hubTaskID(s, id)
	h.routes.mu.Lock()
	var owner *session
	if r := h.routes.tasks[string(hubID)]; r != nil && r.server == s {
		owner = r.sess
	}
	h.routes.mu.Unlock()
	if owner == nil {
		h.logger.Debug("task status for no task of a client", "upstream", s.Config.ID(), "task", string(id))
		return
	}
	if p, err := jsonrpc.SetField(params, "taskId", hubID); err == nil {
		owner.notify(context.Background(), "notifications/tasks/status", p)
	}
}

// forgetTasks drops the tasks of a session that ended.
func (r *routes) forgetTasks(sess *session) {
	for id, t := range r.tasks {
		if t.sess == sess {
			delete(r.tasks, id)
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
