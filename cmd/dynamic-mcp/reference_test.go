package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// everythingArgs are arguments for each tool of server-everything that need
// them; the rest are called with {}.
var everythingArgs = map[string]map[string]any{
	"echo":                           {"message": "hello through the hub"},
	"get-annotated-message":          {"messageType": "success", "includeImage": true},
	"get-resource-links":             {"count": 2},
	"get-resource-reference":         {"resourceType": "Text", "resourceId": 2},
	"get-structured-content":         {"location": "Chicago"},
	"get-sum":                        {"a": 19, "b": 23},
	"gzip-file-as-resource":          {"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=", "outputType": "resource"},
	"trigger-long-running-operation": {"duration": 0.2, "steps": 2},
	"simulate-research-query":        {"topic": "hubs"},
}

// nondeterministic tools answer differently on every call, so their results
// are checked for shape, not compared with a direct call.
var nondeterministic = map[string]bool{
	"get-env":                 true, // the environment of each process
	"simulate-research-query": true, // timings in its report
}

// directTools lists server-everything's tools and calls each one, without
// the hub, as a client that declares what the hub declares upstream
// (upstream.DeclaredCapabilities), so that it is offered the same tools.
func directEverything(t *testing.T) (tools []json.RawMessage, results map[string]json.RawMessage) {
	c := startProcess(t, nil, referenceServer(t, "server-everything", "stdio")...)
	answerClientRequests(c) // roots/list, asked once initialized
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": upstream.DeclaredCapabilities(),
		"clientInfo": map[string]any{"name": "dynamic-mcp-test", "version": "1"}})
	if err := c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{
		JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"},
	}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	mustUnmarshal(t, c.call("tools/list", nil), &list)
	results = map[string]json.RawMessage{}
	for _, raw := range list.Tools {
		if name := toolName(t, raw); !asksTheClient[name] {
			results[name] = c.call("tools/call", map[string]any{"name": name, "arguments": argsFor(name)})
		}
	}
	return list.Tools, results
}

// asksTheClient are the tools that ask the client to sample, elicit or
// list its roots: the clients here answer none through the hub, so they
// are listed but not called (flowback_test.go and era_test.go call them).
var asksTheClient = map[string]bool{"trigger-sampling-request": true, "trigger-elicitation-request": true,
	"trigger-url-elicitation": true, "get-roots-list": true}

func argsFor(name string) map[string]any {
	if a, ok := everythingArgs[name]; ok {
		return a
	}
	return map[string]any{}
}

func toolName(t testing.TB, raw json.RawMessage) string {
	var tool struct {
		Name string `json:"name"`
	}
	mustUnmarshal(t, raw, &tool)
	return tool.Name
}

func TestEverythingThroughHubDynamicMode(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	direct, directResults := directEverything(t)
	c := startHub(t, fmt.Sprintf(`
settings: { `+nodeWaits+` }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
`, yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-06-18")
	c.waitGroupsReady("everything")

	// get_dynamic_tools hands out name, description and input schema of
	// every tool, as the upstream defined them.
	var got []map[string]json.RawMessage
	mustUnmarshal(t, metaTools(t, c.call("tools/call", map[string]any{"name": "get_dynamic_tools", "arguments": map[string]any{"group": "everything"}})), &got)
	if len(got) != len(direct) {
		t.Fatalf("get_dynamic_tools returned %d tools, upstream has %d", len(got), len(direct))
	}
	for i, raw := range direct {
		var want map[string]json.RawMessage
		mustUnmarshal(t, raw, &want)
		assertSameJSON(t, "name", got[i]["name"], want["name"])
		assertSameJSON(t, "description", got[i]["description"], want["description"])
		assertSameJSON(t, "inputSchema of "+toolName(t, raw), got[i]["inputSchema"], withoutSchema(t, want["inputSchema"]))
	}

	for _, raw := range direct {
		name := toolName(t, raw)
		if asksTheClient[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			res := c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
				"arguments": map[string]any{"group": "everything", "name": name, "args": argsFor(name)}})
			if nondeterministic[name] {
				var r struct {
					Content []json.RawMessage `json:"content"`
				}
				mustUnmarshal(t, res, &r)
				if len(r.Content) == 0 {
					t.Fatalf("no content: %s", res)
				}
				return
			}
			assertSameJSON(t, "result", clockless(res), clockless(directResults[name]))
		})
	}
}

// clockTime is how server-everything writes the time a resource was made;
// a direct call and one through the hub can fall in different seconds.
var clockTime = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2} [AP]M`)

func clockless(b []byte) []byte { return clockTime.ReplaceAll(b, []byte("H:MM:SS")) }

func withoutSchema(t testing.TB, schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	mustUnmarshal(t, schema, &m)
	delete(m, "$schema")
	b, _ := json.Marshal(m)
	return b
}

func TestEverythingThroughHubFlatMode(t *testing.T) {
	t.Parallel() // starts its own processes only; overlaps the others' waiting
	direct, directResults := directEverything(t)
	c := startHub(t, fmt.Sprintf(`
mode: flat
settings: { page_size: 3, `+nodeWaits+` }
groups:
  ev:
    description: The reference server
    command: node
    args: %s
`, yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-11-25")
	tools := c.waitFlatTools(len(direct))
	if len(tools) != len(direct) {
		t.Fatalf("hub lists %d tools, upstream %d", len(tools), len(direct))
	}
	// Definitions are the upstream's, field for field; only the name is
	// prefixed with the group.
	for i, raw := range direct {
		var want map[string]any
		mustUnmarshal(t, raw, &want)
		want["name"] = "ev__" + want["name"].(string)
		wantRaw, _ := json.Marshal(want)
		assertSameJSON(t, "definition", tools[i], wantRaw)
	}
	for _, raw := range direct {
		name := toolName(t, raw)
		if nondeterministic[name] || asksTheClient[name] {
			continue
		}
		res := c.call("tools/call", map[string]any{"name": "ev__" + name, "arguments": argsFor(name)})
		assertSameJSON(t, name+" result", clockless(res), clockless(directResults[name]))
	}

	// Prompts, resources and templates: every page of the hub's lists
	// together holds everything upstream offers.
	prompts := collectPages(t, c, "prompts/list", "prompts")
	if len(prompts) != 4 {
		t.Fatalf("want 4 prompts, got %d", len(prompts))
	}
	resources := collectPages(t, c, "resources/list", "resources")
	if len(resources) < 7 {
		t.Fatalf("want the 7 static resources, got %d", len(resources))
	}
	templates := collectPages(t, c, "resources/templates/list", "resourceTemplates")
	if len(templates) != 2 {
		t.Fatalf("want 2 templates, got %d", len(templates))
	}

	got := c.call("prompts/get", map[string]any{"name": "ev__args-prompt", "arguments": map[string]any{"city": "Oslo"}})
	if !strings.Contains(string(got), "Oslo") {
		t.Errorf("prompts/get did not reach upstream: %s", got)
	}
	var res struct {
		URI string `json:"uri"`
	}
	mustUnmarshal(t, resources[0], &res)
	if got := c.call("resources/read", map[string]any{"uri": res.URI}); !strings.Contains(string(got), res.URI) {
		t.Errorf("resources/read by URI: %s", got)
	}
	// Not in the list, but matches demo://resource/dynamic/text/{resourceId}.
	if got := c.call("resources/read", map[string]any{"uri": "demo://resource/dynamic/text/42"}); !strings.Contains(string(got), "42") {
		t.Errorf("resources/read by template: %s", got)
	}
	comp := c.call("completion/complete", map[string]any{
		"ref": map[string]any{"type": "ref/prompt", "name": "ev__completable-prompt"}, "argument": map[string]any{"name": "department", "value": "E"}})
	if !strings.Contains(string(comp), "Engineering") {
		t.Errorf("completion/complete: %s", comp)
	}
	if _, rpcErr := c.request("resources/read", map[string]any{"uri": "nowhere://x"}); rpcErr == nil || rpcErr.Code != -32002 {
		t.Errorf("unknown resource: want -32002, got %+v", rpcErr)
	}
}

// collectPages follows nextCursor through every page of a list.
func collectPages(t *testing.T, c *client, method, field string) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	var params any
	for pages := 0; pages < 100; pages++ {
		var page map[string]json.RawMessage
		mustUnmarshal(t, c.call(method, params), &page)
		var items []json.RawMessage
		mustUnmarshal(t, page[field], &items)
		all = append(all, items...)
		cursor, ok := page["nextCursor"]
		if !ok {
			return all
		}
		var cur string
		mustUnmarshal(t, cursor, &cur)
		params = map[string]any{"cursor": cur}
	}
	t.Fatalf("%s never ended", method)
	return nil
}

func TestFilesystemAndMemoryThroughHub(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the hub works\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startHub(t, fmt.Sprintf(`
mode: flat
settings: { `+nodeWaits+` }
groups:
  files:
    description: Files
    command: node
    args: %s
  memory:
    description: Memory
    prefix: false
    command: node
    args: %s
    env: { MEMORY_FILE_PATH: %q }
`, yamlList(referenceServer(t, "server-filesystem", root)[1:]), yamlList(referenceServer(t, "server-memory")[1:]), filepath.Join(root, "memory.jsonl")))
	c.initialize("2024-11-05")
	c.waitFlatTools(14 + 9)

	text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "files__read_text_file", "arguments": map[string]any{"path": filepath.Join(root, "notes.txt")}}))
	if isErr || text != "the hub works\n" {
		t.Errorf("read_text_file = %q (isError %v)", text, isErr)
	}
	c.call("tools/call", map[string]any{"name": "create_entities", "arguments": map[string]any{"entities": []any{
		map[string]any{"name": "dynamic-mcp", "entityType": "project", "observations": []string{"written in Go"}}}}})
	graph, _ := toolText(t, c.call("tools/call", map[string]any{"name": "read_graph", "arguments": map[string]any{}}))
	if !strings.Contains(graph, "written in Go") {
		t.Errorf("memory did not keep the entity: %s", graph)
	}
}
