package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// modeHub runs a hub in front of the fake upstream "f" with the config's
// mode line mode (e.g. "mode: auto", "" for none) and tail (profiles:,
// clients:), ready to serve in both modes.
func modeHub(t *testing.T, mode, tail string) *Hub {
	t.Helper()
	yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", ""), "mode: flat\n", mode+"\n", 1) + tail
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the views", func() bool {
		s := h.snapshot()
		for _, v := range append([]*view{s.view}, mapValues(s.profiles)...) {
			if v.Starting || v.GroupIndex["f"] == nil {
				return false
			}
		}
		return true
	})
	return h
}

func mapValues(m map[string]*view) []*view {
	var out []*view
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// modeClient is a session of h whose client names itself name at version
// (clientInfo), in profile ("" for none).
func modeClient(t testing.TB, h *Hub, id, name, version, profile string) *pipeClient {
	c := servePipes(t, h, StdioOptions{SessionID: id, Profile: profile})
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":%q,"version":%q}}}`, name, version))
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// toolNames are the names in the session's tools/list.
func (c *pipeClient) toolNames(id int) []string {
	c.t.Helper()
	a := c.rpc(id, "tools/list", `{}`)
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(a.Result, &r); err != nil {
		c.t.Fatalf("tools/list: %s", a.line)
	}
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// modeOf is the mode a tools/list shows: flat when it lists f__echo,
// dynamic when it lists get_dynamic_tools.
func modeOf(t *testing.T, names []string) config.Mode {
	t.Helper()
	switch {
	case slices.Contains(names, "f__echo") && !slices.Contains(names, "get_dynamic_tools"):
		return config.ModeFlat
	case slices.Contains(names, "get_dynamic_tools") && !slices.Contains(names, "f__echo"):
		return config.ModeDynamic
	}
	t.Fatalf("neither mode: %v", names)
	return ""
}

// Under mode: auto, clients of one hub get different tools/list by the
// clientInfo they sent, and each can call its tools the way it was shown
// them; a clients: rule's mode overrides auto, and a named mode.
func TestModeAutoPerClient(t *testing.T) {
	t.Parallel() // its own hub, upstreams and files
	for _, tc := range []struct {
		name, mode, tail string
		clients          [][4]string // name, version, profile, want
	}{
		{"auto", "mode: auto", "", [][4]string{
			{"claude-code", "2.1.332", "", "flat"},
			{"claude-code", "2.0.77", "", "dynamic"}, // before its tool search was on by default
			{"qwen-cli-mcp-client-hub", "0.0.1", "", "flat"},
			{"gemini-cli-mcp-client", "0.0.1", "", "dynamic"},
			{"codex-mcp-client", "0.169.0", "", "dynamic"},
		}},
		{"rules", "mode: auto", "clients:\n  - {match: 'claude-code', mode: dynamic}\n  - {match: 'codex*', mode: flat}\n", [][4]string{
			{"claude-code", "2.1.332", "", "dynamic"},
			{"codex-mcp-client", "0.169.0", "", "flat"},
			{"qwen-cli-mcp-client-hub", "0.0.1", "", "flat"},
		}},
		{"named mode keeps", "mode: dynamic", "", [][4]string{
			{"claude-code", "2.1.332", "", "dynamic"},
		}},
		{"no mode is dynamic", "", "", [][4]string{
			{"claude-code", "2.1.332", "", "dynamic"},
		}},
		{"rule over a named mode", "mode: flat", "clients:\n  - {match: 'gemini*', mode: dynamic}\n", [][4]string{
			{"gemini-cli-mcp-client", "0.0.1", "", "dynamic"},
			{"claude-code", "2.1.332", "", "flat"},
		}},
		{"profile auto", "mode: flat", "profiles:\n  p: {groups: [f], mode: auto}\n", [][4]string{
			{"claude-code", "2.1.332", "p", "flat"},
			{"gemini-cli-mcp-client", "0.0.1", "p", "dynamic"},
			{"gemini-cli-mcp-client", "0.0.1", "", "flat"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := modeHub(t, tc.mode, tc.tail)
			for i, cl := range tc.clients {
				c := modeClient(t, h, fmt.Sprintf("s%d", i), cl[0], cl[1], cl[2])
				got := modeOf(t, c.toolNames(1))
				if string(got) != cl[3] {
					t.Errorf("%s %s (profile %q): %s mode, want %s", cl[0], cl[1], cl[2], got, cl[3])
					continue
				}
				// The client calls its tools the way it was shown them.
				call := `{"name":"f__echo","arguments":{"text":"abc"}}`
				if got == config.ModeDynamic {
					call = `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"abc"}}}`
				}
				if a := c.rpc(2, "tools/call", call); !strings.Contains(a.line, `"text":"abc"`) || strings.Contains(a.line, `"isError":true`) {
					t.Errorf("%s: call: %s", cl[0], a.line)
				}
				// The inspector's sessions say the mode, and why.
				for _, s := range h.Sessions().Info() {
					if s.ID == fmt.Sprintf("s%d", i) && (s.Mode != cl[3] || s.ModeWhy == "") {
						t.Errorf("%s: the session says %q (%s)", cl[0], s.Mode, s.ModeWhy)
					}
				}
			}
		})
	}
}
