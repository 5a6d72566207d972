package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// startingHub is a hub in mode in front of a fast fake "f" and one "s"
// that answers initialize after delay, served from the moment the
// upstreams start, as serve does.
func startingHub(t *testing.T, mode string, delay time.Duration) *Hub {
	t.Helper()
	yaml := fmt.Sprintf("mode: %s\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {startup_wait: 5s}\ngroups:\n"+
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
			if !strings.Contains(got["0"], `"result"`) || at["0"] > 2*time.Second {
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
