package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// startingHub is a hub in mode in front of a fast fake "f" and one "s"
// that answers initialize after delay, served from the moment the
// upstreams start, as serve does. Its startup_wait bounds a hang only:
// the fake's start (a race-built binary) on a loaded machine must not
// outlast it.
func startingHub(t *testing.T, mode string, delay time.Duration) *Hub {
	t.Helper()
	yaml := fmt.Sprintf("mode: %s\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {startup_wait: 1m}\ngroups:\n"+
		"  f:\n    description: fast\n    command: %q\n"+
		"  s:\n    description: slow\n    command: %q\n    args: [\"-delay\", %q]\n",
		mode, t.TempDir(), fakeBin, fakeBin, delay.String())
	h, _ := runHub(t, yaml, true)
	return h
}

// A one-shot client sends everything at once, right after starting the
// hub: its first list has every group and its call a real result, and it
// is not told of list changes it never saw.
func TestOneShotClientSeesEverythingAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode, call string
		want       []string
	}{
		{"flat", `{"name":"s__echo","arguments":{"text":"hello"}}`, []string{`"name":"f__echo"`, `"name":"s__echo"`}},
		{"dynamic", `{"name":"call_dynamic_tool","arguments":{"group":"s","name":"echo","args":{"text":"hello"}}}`, []string{`"enum":["f","s"]`, "- s: slow"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := startingHub(t, tc.mode, 700*time.Millisecond)
			c := servePipes(t, h, StdioOptions{})
			start := time.Now()
			c.send(initializeMsg)
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + tc.call + `}`)
			// Requests run concurrently: the answers come in any order.
			got, at := c.answersAt(start, "0", "1", "2")
			if !strings.Contains(got["0"], `"result"`) || at["0"] > 2*time.Second*await.Slow { // not held for startup_wait
				t.Errorf("initialize after %v: %.200s", at["0"], got["0"])
			}
			list := got["1"]
			for _, w := range tc.want {
				if !strings.Contains(list, w) {
					t.Errorf("first tools/list lacks %s: %.600s", w, list)
				}
			}
			if strings.Contains(list, "unavailable") || strings.Contains(list, "none yet") {
				t.Errorf("first tools/list marks a starting group: %.600s", list)
			}
			if call := got["2"]; !strings.Contains(call, `"text":"hello"`) || strings.Contains(call, `"isError":true`) {
				t.Errorf("call: %.300s", call)
			}
			c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if got := c.answerAll("3"); strings.Contains(got, "list_changed") {
				t.Errorf("told of a change to a list it saw whole: %s", got)
			}
		})
	}
}

// gatedHub is a hub in dynamic mode in front of one fake "s" (its
// resources fake://s/...) that answers initialize once the file gate
// exists, with startup_wait wait; served from the moment it starts.
func gatedHub(t *testing.T, gate string, wait time.Duration) *Hub {
	t.Helper()
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nsettings: {startup_wait: %s}\ngroups:\n"+
		"  s:\n    description: slow\n    command: %q\n    args: [\"-name\", \"s\", %s]\n",
		t.TempDir(), wait, fakeBin, gated(gate))
	h, _ := runHub(t, yaml, true)
	return h
}

// A client whose first request is a prompt, a resource, a subscription
// or a completion, asked while the upstream that owns it still starts,
// gets the upstream's answer, as a call to a tool not known yet does: it
// waits for the upstream up to startup_wait. A name no upstream brings is
// answered "not found" once startup_wait has passed.
func TestFirstRequestsWaitForStartingUpstreams(t *testing.T) {
	t.Parallel()
	t.Run("answered", func(t *testing.T) {
		gate := filepath.Join(t.TempDir(), "gate")
		h := gatedHub(t, gate, 30*time.Second)
		c := servePipes(t, h, StdioOptions{})
		c.send(initializeMsg)
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		want := map[string]string{}
		ask := func(id, method, params, answer string) {
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
			want[id] = answer
		}
		ask("1", "prompts/get", `{"name":"s__prompt-1","arguments":{"topic":"hubs"}}`, `"text":"prompt-1 about hubs"`)
		ask("2", "resources/read", `{"uri":"fake://s/res/2"}`, `"text":"content of fake://s/res/2"`)
		ask("3", "resources/read", `{"uri":"fake://s/item/7"}`, `"text":"content of fake://s/item/7"`)
		ask("4", "resources/subscribe", `{"uri":"fake://s/res/1"}`, `"result":{}`)
		ask("5", "completion/complete", `{"ref":{"type":"ref/prompt","name":"s__prompt-1"},"argument":{"name":"topic","value":""}}`, `"values":["ref:prompt-1"]`)
		ask("6", "completion/complete", `{"ref":{"type":"ref/resource","uri":"fake://s/item/{id}"},"argument":{"name":"id","value":""}}`, `"values":["ref:fake://s/item/{id}"]`)
		// Once ping is answered, the requests before it have been read
		// and are being served, while the upstream cannot be ready.
		c.send(`{"jsonrpc":"2.0","id":50,"method":"ping"}`)
		got := map[string]string{}
		for line := range strings.SplitSeq(c.answerAll("50"), "\n") {
			var m struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
				got[string(m.ID)] = line // answered before the upstream could be ready
			}
		}
		if !h.snapshot().view.Starting {
			t.Fatal("the upstream is ready before its gate opened")
		}
		openGate(t, gate)
		var rest []string
		for id := range want {
			if got[id] == "" {
				rest = append(rest, id)
			}
		}
		later, _ := c.answersAt(time.Now(), rest...)
		maps.Copy(got, later)
		for id, w := range want {
			if !strings.Contains(got[id], w) || strings.Contains(got[id], `"error"`) {
				t.Errorf("request %s: %.300s, want %s", id, got[id], w)
			}
		}
	})
	t.Run("not found", func(t *testing.T) {
		const wait = 300 * time.Millisecond
		h := gatedHub(t, filepath.Join(t.TempDir(), "gate"), wait) // never opened
		c := servePipes(t, h, StdioOptions{})
		c.send(initializeMsg)
		c.answer("0")
		start := time.Now()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"s__nope"}}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"fake://s/nope"}}`)
		c.send(`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"s__nope"},"argument":{"name":"a","value":""}}}`)
		c.send(`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"fake://s/nope"}}`)
		got, at := c.answersAt(start, "1", "2", "3", "4")
		for id, w := range map[string]string{"1": "Prompt not found", "2": "Resource not found", "3": "Prompt not found", "4": "Resource not found"} {
			if !strings.Contains(got[id], w) || at[id] < wait || at[id] > 10*time.Second*await.Slow {
				t.Errorf("request %s after %v: %.300s, want %q after startup_wait (%v)", id, at[id], got[id], w, wait)
			}
		}
	})
}
