package server

import (
	"encoding/json"
	"fmt"
	"testing"
)

// A session keeps the routes of its maxSessionTasks most recent tasks:
// tasks that are never announced as finished cannot grow the hub for the
// session's life, and a session's end walks only its own tasks.
func TestTaskRoutesBoundedPerSession(t *testing.T) {
	h := fakeHub(t)
	srv := h.mgr.Servers()[0]
	a, b := newSession("a", "stdio"), newSession("b", "stdio")
	first := h.newTask(&taskRoute{server: srv, conn: 1, id: json.RawMessage(`"b0"`), sess: b})
	var ids []json.RawMessage
	for i := range maxSessionTasks + 5 {
		ids = append(ids, h.newTask(&taskRoute{server: srv, conn: 1, id: json.RawMessage(fmt.Sprintf(`"t%d"`, i)), sess: a}))
	}
	rt := h.tasks
	h.routes.Lock()
	defer h.routes.Unlock()
	if n := len(rt.tasks); n != maxSessionTasks+1 {
		t.Errorf("%d task routes kept, want %d (a's newest and b's one)", n, maxSessionTasks+1)
	}
	if n := len(rt.taskKeys); n != maxSessionTasks+1 {
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
	rt.forgetTasks(a)
	if n := len(rt.tasks); n != 1 {
		t.Errorf("%d task routes after a ended, want b's 1", n)
	}
}
