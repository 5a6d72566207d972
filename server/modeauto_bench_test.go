package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// BenchmarkModeReplay replays one scripted task (read a file with the
// filesystem server's read_text_file, then answer) through the hub, in
// flat and dynamic mode, as two kinds of client send it to their model,
// and reports per mode what the model is sent:
//
//   - sends-all: a client without tool search (Gemini CLI, Codex,
//     opencode) sends every listed tool's definition on every model
//     request;
//   - defers: a client with a tool search of its own (Claude Code 2.1,
//     qwen-code 0.24) sends only the MCP tools' names, with its search
//     tool; the model searches (select:NAME), and from then on the
//     definitions found are sent too.
//
// The upstreams are the fake serving the tools/list dumps of the
// filesystem, memory and GitHub reference servers (testdata/search, 49
// tools); every byte counted is the hub's own answer (tools/list,
// get_dynamic_tools, the call's result) or what the model is scripted to
// send (its tool calls' arguments). Metrics: turns (model requests),
// defs-B/req (tool definitions or names sent, per request), last-B (the
// definitions and the conversation's tool traffic in the last request:
// how large the conversation has grown) and sent-B (all requests'
// definitions and tool traffic: what the task uploads, beside the prompts
// the client adds, which are the same in both modes).
//
//	go test ./server -run '^$' -bench ModeReplay -benchtime 3x
func BenchmarkModeReplay(b *testing.B) {
	h := replayHub(b)
	for _, client := range []string{"sends-all", "defers"} {
		for _, mode := range []string{"flat", "dynamic"} {
			b.Run(client+"/"+mode, func(b *testing.B) {
				c := modeClient(b, h, client+mode, mode+"-client", "1", "")
				var r replay
				for i := range b.N {
					r = replay{c: c, id: 10 * i}
					r.run(client == "defers", mode == "flat")
				}
				b.ReportMetric(float64(r.turns), "turns")
				b.ReportMetric(float64(r.defsSent)/float64(r.turns), "defs-B/req")
				b.ReportMetric(float64(r.lastSent), "last-B")
				b.ReportMetric(float64(r.sent), "sent-B")
			})
		}
	}
}

// replayHub is a hub in dynamic mode whose clients: rules show a client
// named flat-client flat mode, in front of three fakes serving the
// dumps' tools (and only those).
func replayHub(b *testing.B) *Hub {
	dumps := filepath.Join("..", "testdata", "search")
	var groups strings.Builder
	for _, g := range []struct{ name, dump string }{{"files", "filesystem"}, {"memory", "memory"}, {"github", "github"}} {
		file := filepath.Join(dumps, g.dump+".json")
		raw, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		var dump struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(raw, &dump); err != nil {
			b.Fatal(err)
		}
		var names []string
		for _, t := range dump.Tools {
			names = append(names, fmt.Sprintf("%q", t.Name))
		}
		abs, _ := filepath.Abs(file)
		fmt.Fprintf(&groups, "  %s:\n    description: the %s server\n    command: %q\n    args: [\"-tools-file\", %q]\n    allow: [%s]\n",
			g.name, g.dump, fakeBin, abs, strings.Join(names, ", "))
	}
	yaml := fmt.Sprintf("mode: dynamic\nstate_dir: %q\naudit: {path: \"off\"}\nclients:\n  - {match: flat-client, mode: flat}\ngroups:\n%s",
		b.TempDir(), groups.String())
	h, mgr := runHub(b, yaml, true)
	await.For(b, 30*time.Second, "the upstreams", func() bool {
		for _, s := range mgr.Servers() {
			if s.Status().State != upstream.StateReady {
				return false
			}
		}
		return true
	})
	await.For(b, 10*time.Second, "the views", func() bool { v := h.snapshot().view; return !v.Starting && v.GroupIndex["files"] != nil })
	return h
}

// replay is one run of the scripted task by one client.
type replay struct {
	c  *pipeClient
	id int

	defs    map[string]json.RawMessage // the listed tools' definitions, by name
	order   []string
	loaded  map[string]bool // tools a deferring client's search has loaded
	history int             // the tool traffic so far: calls' arguments and results

	turns, defsSent, lastSent, sent int
}

// run plays the task: list, then the model's requests until it answers.
func (r *replay) run(defers, flat bool) {
	r.list()
	r.loaded = map[string]bool{}
	var steps []func()
	readArgs := `{"path":"/home/me/notes.txt"}`
	if defers {
		// The model first searches for the tools it needs; the
		// client's answer names them (Claude Code: tool_reference).
		want := []string{"files__read_text_file"}
		if !flat {
			want = []string{"get_dynamic_tools", "call_dynamic_tool"}
		}
		steps = append(steps, func() {
			r.modelCalls(`{"query":"select:`+strings.Join(want, ",")+`"}`, json.RawMessage(fmt.Sprintf("%q", want)))
			for _, n := range want {
				r.loaded[n] = true
			}
		})
	}
	if flat {
		steps = append(steps, func() { r.call("files__read_text_file", readArgs) })
	} else {
		steps = append(steps,
			func() { r.call("get_dynamic_tools", `{"group":"files"}`) },
			func() {
				r.call("call_dynamic_tool", `{"group":"files","name":"read_text_file","args":`+readArgs+`}`)
			})
	}
	steps = append(steps, func() {}) // the model answers: the last request
	for _, step := range steps {
		r.request(defers)
		step()
	}
}

// list reads the session's tools/list.
func (r *replay) list() {
	r.id++
	a := r.c.rpc(r.id, "tools/list", `{}`)
	var l struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(a.Result, &l); err != nil {
		r.c.t.Fatal(err)
	}
	r.defs, r.order = map[string]json.RawMessage{}, nil
	for _, t := range l.Tools {
		var d struct{ Name string }
		json.Unmarshal(t, &d)
		r.defs[d.Name] = t
		r.order = append(r.order, d.Name)
	}
}

// request counts one model request: the tools it carries and the
// conversation so far.
func (r *replay) request(defers bool) {
	defs := 0
	for _, n := range r.order {
		switch {
		case !defers || r.loaded[n]:
			defs += len(r.defs[n])
		default:
			defs += len("mcp__hub__" + n) // a deferred tool: its name only
		}
	}
	r.turns++
	r.defsSent += defs
	r.lastSent = defs + r.history
	r.sent += r.lastSent
}

// modelCalls adds a call the client answers itself (its tool search).
func (r *replay) modelCalls(args string, result json.RawMessage) {
	r.history += len(args) + len(result)
}

// call has the model call the hub's tool name with args.
func (r *replay) call(name, args string) {
	r.id++
	a := r.c.rpc(r.id, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	if a.Error != nil || strings.Contains(string(a.Result), `"isError":true`) {
		r.c.t.Fatalf("%s: %s", name, a.line)
	}
	r.history += len(args) + len(a.Result)
}
