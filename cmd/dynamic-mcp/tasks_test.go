package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A task-augmented call of the everything server's simulate-research-query
// runs as a task through the hub, in both modes: the client gets a task
// id of the hub's, polls it with tasks/get, finds it in tasks/list, and
// takes its result with tasks/result.
func TestTasksThroughTheHub(t *testing.T) {
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := startHub(t, fmt.Sprintf("mode: %s\nsettings: {"+nodeWaits+"}\ngroups:\n  ev:\n    description: The reference server\n    url: %s\n",
				mode, sharedEverythingURL(t)))
			init := string(c.initialize("2025-11-25"))
			if !strings.Contains(init, `"tasks"`) {
				t.Errorf("the hub does not declare tasks: %s", init)
			}
			params := map[string]any{"name": "ev__simulate-research-query", "arguments": map[string]any{"topic": "tides"}, "task": map[string]any{"ttl": 60000}}
			if mode == "dynamic" {
				params = map[string]any{"name": "call_dynamic_tool", "arguments": map[string]any{"group": "ev", "name": "simulate-research-query", "args": map[string]any{"topic": "tides"}}, "task": map[string]any{"ttl": 60000}}
			} else {
				c.waitFlatTools(1)
			}
			var created struct {
				Task struct {
					TaskID string `json:"taskId"`
					Status string `json:"status"`
				} `json:"task"`
			}
			await.Costly(t, 20*time.Second, "the group", func() bool {
				res, rpcErr := c.request("tools/call", params)
				return rpcErr == nil && json.Unmarshal(res, &created) == nil && created.Task.TaskID != ""
			})
			id := created.Task.TaskID
			if !strings.HasPrefix(id, "ev~") {
				t.Errorf("task id %q is not the hub's", id)
			}
			if list := string(c.call("tasks/list", nil)); !strings.Contains(list, `"taskId":"`+id+`"`) {
				t.Errorf("tasks/list lacks %s: %s", id, list)
			}
			await.Costly(t, 20*time.Second, "the task to complete", func() bool {
				var task struct {
					TaskID string `json:"taskId"`
					Status string `json:"status"`
				}
				json.Unmarshal(c.call("tasks/get", map[string]any{"taskId": id}), &task)
				if task.TaskID != id {
					t.Fatalf("tasks/get answered for %q", task.TaskID)
				}
				return task.Status == "completed"
			})
			if res := string(c.call("tasks/result", map[string]any{"taskId": id})); !strings.Contains(res, "Research Report: tides") {
				t.Errorf("tasks/result: %.300s", res)
			}
			if _, rpcErr := c.request("tasks/get", map[string]any{"taskId": "ev~nope"}); rpcErr == nil || rpcErr.Code != -32602 {
				t.Errorf("an unknown task: %+v", rpcErr)
			}
		})
	}
}
