package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// instructionsYAML is a hub in dynamic mode in front of fakes with
// instructions of every kind: short (a, and b, which speaks 2026-07-28
// upstream), switched off (quiet), none (none), over the group bound
// (big2-big4, 3 KB each) and over what the hub keeps of a server (big1,
// 20 KB). Profile flatab sees a and big1 in flat mode, onlyb sees b.
func instructionsYAML(t *testing.T) string {
	t.Helper()
	group := func(name, flags string) string {
		return fmt.Sprintf("  %s:\n    description: fake %s\n    command: %q\n    args: [%s]\n", name, name, fakeBin, flags)
	}
	return fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\nmode: dynamic\ngroups:\n", t.TempDir()) +
		group("a", `"-instructions", "Use a's echo to greet."`) +
		group("b", `"-modern", "-instructions", "B speaks 2026-07-28."`) +
		group("quiet", `"-instructions", "Never shown."`) + "    instructions: false\n" +
		group("none", `"-instructions", ""`) +
		group("big1", `"-instructions", "BIG1", "-instructions-pad", "20000"`) +
		group("big2", `"-instructions", "BIG2", "-instructions-pad", "3000"`) +
		group("big3", `"-instructions", "BIG3", "-instructions-pad", "3000"`) +
		group("big4", `"-instructions", "BIG4", "-instructions-pad", "3000"`) +
		"profiles:\n  flatab: {groups: [a, big1], mode: flat}\n  onlyb: {groups: [b]}\n"
}

// instructionsOf is the instructions of an initialize or server/discover
// answer line.
func instructionsOf(t *testing.T, line string) string {
	t.Helper()
	var m struct {
		Result *struct {
			Instructions string `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result == nil {
		t.Fatalf("no result: %s", line)
	}
	return m.Result.Instructions
}

// The upstreams' instructions reach the client in initialize (and in
// server/discover for 2026-07-28), headed by their group, for the groups
// of the client's view alone, each cut to maxGroupInstructions and all
// to maxInstructions, without a group that says instructions: false; and
// get_dynamic_tools hands out a group's whole text.
func TestInstructionsReachTheClient(t *testing.T) {
	t.Parallel()
	h, mgr := runHub(t, instructionsYAML(t), true)
	await.For(t, 20*time.Second, "every upstream", func() bool {
		for _, s := range mgr.Servers() {
			if s.Status().State != upstream.StateReady {
				return false
			}
		}
		return !h.snapshot().view.Starting
	})
	legacy := func(profile string) string {
		c := servePipes(t, h, StdioOptions{SessionID: "legacy-" + profile, Profile: profile})
		c.send(initializeMsg)
		return instructionsOf(t, c.answer("0"))
	}
	modern := func(profile string) string {
		c := servePipes(t, h, StdioOptions{SessionID: "modern-" + profile, Profile: profile})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta("2026-07-28") + `}}`)
		return instructionsOf(t, c.answer("1"))
	}
	section := func(group, text string) string { return "## group: " + group + "\n" + text }
	cut := func(text, mark string) string { return text[:views.MaxGroupInstructions-len(mark)] + mark }
	fake := func(text string, pad int) string { return text + strings.Repeat(" filler", pad/7+1)[:pad] }

	whole := strings.Join([]string{
		section("a", "Use a's echo to greet."),
		section("b", "B speaks 2026-07-28."),
		section("big1", cut(fake("BIG1", 20000), views.CutMark)),
		section("big2", cut(fake("BIG2", 3000), views.CutMark)),
		section("big3", cut(fake("BIG3", 3000), views.CutMark)),
		"… (left out, over 8 KiB: the instructions of big4; get_dynamic_tools returns them)",
	}, "\n\n")
	for _, tc := range []struct {
		name, profile, want string
	}{
		{"whole config", "", whole},
		{"flat profile", "flatab", section("a", "Use a's echo to greet.") + "\n\n" + section("big1", cut(fake("BIG1", 20000), views.CutMarkFlat))},
		{"profile of one group", "onlyb", section("b", "B speaks 2026-07-28.")},
	} {
		for era, ask := range map[string]func(string) string{"initialize": legacy, "server/discover": modern} {
			t.Run(tc.name+"/"+era, func(t *testing.T) {
				got := ask(tc.profile)
				if got != tc.want {
					t.Errorf("instructions:\n%s\nwant:\n%s", got, tc.want)
				}
				if len(got) > views.MaxInstructions {
					t.Errorf("instructions of %d bytes, over %d", len(got), views.MaxInstructions)
				}
			})
		}
	}

	// get_dynamic_tools: the whole text, as far as the hub keeps it.
	c := &toolClient{pipeClient: servePipes(t, h, StdioOptions{SessionID: "get"})}
	c.send(initializeMsg)
	c.answer("0")
	for group, want := range map[string]string{
		"a":     "Use a's echo to greet.",
		"big2":  fake("BIG2", 3000),
		"big1":  fake("BIG1", 20000)[:upstream.MaxInstructions] + "\n… (cut by dynamic-mcp: the server's instructions are longer than 16 KiB)",
		"quiet": "",
		"none":  "",
	} {
		obj := c.metaObject(views.GetToolsName, map[string]any{"group": group})
		var got struct {
			Group        string            `json:"group"`
			Instructions *string           `json:"instructions"`
			Tools        []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(obj, &got); err != nil {
			t.Fatalf("get_dynamic_tools %s: %v: %s", group, err, obj)
		}
		if got.Group != group || len(got.Tools) == 0 {
			t.Errorf("get_dynamic_tools %s: group %q, %d tools", group, got.Group, len(got.Tools))
		}
		switch {
		case want == "" && got.Instructions != nil:
			t.Errorf("get_dynamic_tools %s has instructions %q, want none", group, *got.Instructions)
		case want != "" && (got.Instructions == nil || *got.Instructions != want):
			t.Errorf("get_dynamic_tools %s: instructions %.80v..., want %.80q... (%d bytes)", group, got.Instructions, want, len(want))
		}
	}
}

// metaObject calls a meta-tool and returns the object it answers, after
// checking that its text and its structuredContent are that same object.
func (c *toolClient) metaObject(name string, args any) json.RawMessage {
	c.t.Helper()
	return c.metaObjectIn(name, args, c.ask("tools/call", map[string]any{"name": name, "arguments": args}))
}

// metaObjectIn is metaObject of the answer line of a call already made.
func (c *toolClient) metaObjectIn(name string, args any, line string) json.RawMessage {
	c.t.Helper()
	var m struct {
		Result struct {
			Content           []struct{ Type, Text string } `json:"content"`
			StructuredContent json.RawMessage               `json:"structuredContent"`
			IsError           bool                          `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result.Content) != 1 || m.Result.IsError {
		c.t.Fatalf("%s %v: not one text: %s", name, args, line)
	}
	text, obj := m.Result.Content[0].Text, m.Result.StructuredContent
	if !strings.HasPrefix(text, "{") || !json.Valid([]byte(text)) {
		c.t.Fatalf("%s %v: the text is no JSON object: %.200s", name, args, text)
	}
	if !bytes.Equal(obj, []byte(text)) {
		c.t.Fatalf("%s %v: structuredContent\n  %.300s\ndiffers from the text\n  %.300s", name, args, obj, text)
	}
	return obj
}

// initialize does not wait for a group still starting: its instructions
// are left out, and a session that comes once it is up gets them.
func TestInstructionsOfAStartingGroup(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\ngroups:\n"+
		"  a: {description: fake, command: %q, args: [\"-instructions\", \"A.\"]}\n"+
		"  late: {description: fake, command: %q, args: [\"-instructions\", \"Late.\", %s]}\n", t.TempDir(), fakeBin, fakeBin, gated(gate))
	h, _ := runHub(t, yaml, true)
	await.For(t, 20*time.Second, "group a", func() bool { return h.snapshot().view.GroupIndex["a"].State == upstream.StateReady })
	initialize := func(id string) string {
		c := servePipes(t, h, StdioOptions{SessionID: id})
		c.send(initializeMsg)
		return instructionsOf(t, c.answer("0"))
	}
	if got := initialize("first"); got != "## group: a\nA." {
		t.Errorf("while late starts: %q", got)
	}
	openGate(t, gate)
	await.For(t, 20*time.Second, "group late", func() bool { return h.snapshot().view.GroupIndex["late"].State == upstream.StateReady })
	if got := initialize("second"); got != "## group: a\nA.\n\n## group: late\nLate." {
		t.Errorf("once late is up: %q", got)
	}
}
