package fakeupstream

import (
	"encoding/json"
	"strconv"
	"sync"
)

// Tasks, with -tasks: a tools/call that asks for a task (its params have
// "task") makes one, numbered from 1 in each process as a real server
// would, done at once, its result the text "task result: <text>". The
// announce tool sends notifications/tasks/status for every task the
// process made, then answers.

var withTasks = flags.Bool("tasks", false, "run task-augmented tools/call as tasks, and offer the announce tool")

var tasks = struct {
	sync.Mutex
	next   int
	result map[string]string // by task id
}{result: map[string]string{}}

func taskInfo(id string) map[string]any {
	return map[string]any{"taskId": id, "status": "completed", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000}
}

// taskTools are the tools -tasks adds.
func taskTools() []any {
	if !*withTasks {
		return nil
	}
	return []any{simpleTool("announce", "Send notifications/tasks/status for every task, then answer")}
}

// taskCapability is what -tasks adds to the capabilities.
func taskCapability(caps map[string]any) {
	if *withTasks {
		caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	}
}

// startTask answers a tools/call that asks for a task, or the announce
// tool, and reports whether it did.
func startTask(req request, name, text string) bool {
	if !*withTasks {
		return false
	}
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	_ = json.Unmarshal(req.Params, &p)
	tasks.Lock()
	defer tasks.Unlock()
	switch {
	case name == toolName("announce"):
		for id := 1; id <= tasks.next; id++ {
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": taskInfo(strconv.Itoa(id))})
		}
		reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "announced " + strconv.Itoa(tasks.next)}}})
		return true
	case len(p.Task) > 0:
		tasks.next++
		id := strconv.Itoa(tasks.next)
		tasks.result[id] = "task result: " + text
		reply(req.ID, map[string]any{"task": taskInfo(id)})
		return true
	}
	return false
}

// taskRequest answers tasks/get, tasks/result, tasks/cancel and tasks/list.
func taskRequest(req request) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(req.Params, &p)
	tasks.Lock()
	defer tasks.Unlock()
	if req.Method == "tasks/list" {
		list := []any{}
		for id := 1; id <= tasks.next; id++ {
			list = append(list, taskInfo(strconv.Itoa(id)))
		}
		reply(req.ID, map[string]any{"tasks": list})
		return
	}
	text, ok := tasks.result[p.TaskID]
	switch {
	case !ok:
		fail(req.ID, -32602, "Task not found: "+p.TaskID, nil)
	case req.Method == "tasks/result":
		reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}},
			"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": p.TaskID}}})
	default:
		reply(req.ID, taskInfo(p.TaskID))
	}
}
