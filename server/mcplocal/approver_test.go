//go:build unix

package mcplocal

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// A Hello that claims to answer as someone else ("by": "ui") approves in
// the name of the user the socket admits, never in the claimed one.
func TestApproverIsNotTheHellos(t *testing.T) {
	h := startGroup(t, Options{Idle: func() time.Duration { return time.Hour }},
		`policy: [{action: prompt, tool: echo, description: "echo needs a person"}]`)
	c, br, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession})
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	write := func(s string) {
		if _, err := c.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.TrimSuffix(initialize("a"), "\n"))
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	readAnswer := func(id string) string {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return "read: " + err.Error()
			}
			if strings.Contains(line, `"id":`+id+`,`) && !strings.Contains(line, `"method"`) {
				return line
			}
		}
	}
	// The tools are listed once the upstream is up.
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hung hub: a busy machine must not fail it
	for id := 10; ; id++ {
		write(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/list"}`)
		if strings.Contains(readAnswer(strconv.Itoa(id)), "f__echo") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake's tools were never listed")
		}
	}
	answered := make(chan string, 1)
	go func() { answered <- readAnswer("2") }()
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`)
	var pending approval.List
	await.For(t, 30*time.Second, "a call waiting for approval", func() bool {
		if _, _, r := h.dial(t, local.Hello{Version: "v1", Op: local.OpApprovals}); r.Approvals != nil {
			pending = *r.Approvals
		}
		return len(pending.Pending) > 0
	})
	// The Hello as a raw line, with the "by" a bridge of another build,
	// or anyone on the socket, might send.
	ac, err := local.Dial(context.Background(), h.paths)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	hello, _ := json.Marshal(map[string]any{"dynamic-mcp": "v1", "op": local.OpApprove, "id": pending.Pending[0].ID, "by": "ui",
		"grant": map[string]any{"calls": 1}})
	if _, err := ac.Write(append(hello, '\n')); err != nil {
		t.Fatal(err)
	}
	var r local.Reply
	if err := local.ReadLine(bufio.NewReader(ac), &r); err != nil || r.Error != "" || r.Grant == nil {
		t.Fatalf("approve: %+v %v", r, err)
	}
	if r.Grant.ApprovedBy != local.Approver() {
		t.Errorf("the grant was approved by %q, want %q", r.Grant.ApprovedBy, local.Approver())
	}
	select {
	case line := <-answered:
		if !strings.Contains(line, `"result"`) {
			t.Errorf("the approved call: %s", line)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Error("the approved call was not answered")
	}
}
