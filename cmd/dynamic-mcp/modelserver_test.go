package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// modelServer is a model API of the test's own on loopback, for the agent
// clients of agents_test.go: it speaks just enough of the Anthropic
// Messages API, the Gemini API and the OpenAI Responses API to stream a
// tool call or a text answer, records every request, and plays a fixed
// script (modelScript) that it reads off each request's conversation.
// What the clients here do not ask (a request not streamed, counting
// tokens) it answers 404 and logs.
type modelServer struct {
	t      testing.TB
	script modelScript
	URL    string

	mu       sync.Mutex // guards requests and nextID
	requests []modelRequest
	nextID   int
}

// modelRequest is what the model server saw of one request.
type modelRequest struct {
	// Tools are the tools the request offers the model, ToolBytes the
	// bytes of their definitions (the request's tools array as sent).
	Tools     []modelTool
	ToolBytes int
	// Results are the tool results in the request's conversation, in
	// order, each as the client sent it (JSON).
	Results []string
	// Deferred are the tools the request names without their
	// definitions, for a tool search of the client's own to load
	// (Claude Code 2.1 with its ToolSearch on: deferredTools).
	Deferred []string
}

// modelTool is one tool a request offers: its name (and namespace, in
// the Responses API) and the bytes of its definition as sent.
type modelTool struct {
	Name, Namespace string
	Bytes           int
}

// toolsOf is the tools of definitions, each a JSON object with a name.
func toolsOf(definitions []json.RawMessage) []modelTool {
	tools := make([]modelTool, 0, len(definitions))
	for _, d := range definitions {
		var tool struct{ Name string }
		json.Unmarshal(d, &tool)
		tools = append(tools, modelTool{Name: tool.Name, Bytes: len(d)})
	}
	return tools
}

// modelScript is what the model does: in dynamic mode it asks for the
// group's tools with get_dynamic_tools, calls its echo tool with
// call_dynamic_tool, then answers; in flat mode it calls <group>__echo,
// then answers. Which step comes is the number of tool results in the
// conversation so far.
type modelScript struct {
	group, message string
	flat           bool
}

// finalAnswer is the model's last answer, which the client prints.
func (s modelScript) finalAnswer() string { return "FINAL ANSWER after echoing " + s.message }

// modelStep is one answer of the model: a call of Tool (in Namespace)
// with Args, or Text.
type modelStep struct {
	Tool, Namespace string
	Args            map[string]any
	Text            string
}

// next is the model's answer to a request that offers tools and carries
// results tool results.
func (s modelScript) next(tools []modelTool, results int) modelStep {
	type call struct {
		tool string
		args map[string]any
	}
	echo := map[string]any{"message": s.message}
	steps := []call{{s.group + "__echo", echo}}
	if !s.flat {
		steps = []call{
			{"get_dynamic_tools", map[string]any{"group": s.group}},
			{"call_dynamic_tool", map[string]any{"group": s.group, "name": "echo", "args": echo}},
		}
	}
	if results >= len(steps) {
		return modelStep{Text: s.finalAnswer()}
	}
	want := steps[results]
	if tool, found := findTool(tools, want.tool); found {
		return modelStep{Tool: tool.Name, Namespace: tool.Namespace, Args: want.args}
	}
	return modelStep{Text: fmt.Sprintf("the script's model found no tool %s among %v", want.tool, tools)}
}

// findTool finds the hub's tool name among tools, under the prefix the
// client gives an MCP server's tools (mcp__hub__ in Claude Code, mcp_hub_
// in Gemini CLI; Codex puts them in a namespace, mcp__hub).
func findTool(tools []modelTool, name string) (modelTool, bool) {
	for _, tool := range tools {
		if tool.Name == name || strings.HasSuffix(tool.Name, "_"+name) {
			return tool, true
		}
	}
	return modelTool{}, false
}

// startModelServer starts a model server playing script until the test
// ends.
func startModelServer(t testing.TB, script modelScript) *modelServer {
	m := &modelServer{t: t, script: script}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// Requests is every request the model server was asked to answer.
func (m *modelServer) Requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.requests...)
}

func (m *modelServer) id() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	return m.nextID
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		m.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse":
		m.gemini(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		m.responses(w, body)
	default:
		m.t.Logf("model server: %s %s: not part of the script", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

// record keeps what a request offered and carried, and returns the
// script's answer to it.
func (m *modelServer) record(req modelRequest) modelStep {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	return m.script.next(req.Tools, len(req.Results))
}

// deferredTools are the tools Claude Code 2.1 lists by name in a text of
// its request when its tool search is on, a name a line, behind a
// sentence that ends in a colon: "The following deferred tools are now
// available via ToolSearch. ...:\nCronCreate\n...\nmcp__hub__...".
func deferredTools(text string) []string {
	_, list, found := strings.Cut(text, "deferred tools are now available via ToolSearch")
	if !found {
		return nil
	}
	_, list, _ = strings.Cut(list, ":\n")
	var names []string
	for _, line := range strings.Split(list, "\n") {
		if line == "" || strings.ContainsAny(line, " \t") {
			break
		}
		names = append(names, line)
	}
	return names
}

// decodeRequest decodes body into req and says how many bytes its tools
// array has; it answers 400 to a body that is not a request of api.
func decodeRequest(w http.ResponseWriter, body []byte, req any, api string) (toolBytes int, ok bool) {
	var raw struct {
		Tools json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, req) != nil || json.Unmarshal(body, &raw) != nil {
		http.Error(w, "not a "+api+" request", http.StatusBadRequest)
		return 0, false
	}
	return len(raw.Tools), true
}

// sse writes one server-sent event (no event name when event is "").
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
}

// anthropic answers the Anthropic Messages API (POST /v1/messages),
// streamed as its SSE events.
func (m *modelServer) anthropic(w http.ResponseWriter, body []byte) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	toolBytes, ok := decodeRequest(w, body, &req, "Messages")
	if !ok {
		return
	}
	var results, deferred []string
	for _, msg := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				results = append(results, string(b.Content))
			case "text":
				deferred = append(deferred, deferredTools(b.Text)...)
			}
		}
	}
	step := m.record(modelRequest{Tools: toolsOf(req.Tools), ToolBytes: toolBytes, Results: results, Deferred: deferred})
	id := m.id()
	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%04d", id), "type": "message", "role": "assistant", "model": "script",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	}})
	stop := "end_turn"
	start, delta := map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta", "text": step.Text}
	if step.Tool != "" {
		args, _ := json.Marshal(step.Args)
		stop = "tool_use"
		start = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%04d", id), "name": step.Tool, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(args)}
	}
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// gemini answers the Gemini API's streamGenerateContent, as SSE
// (alt=sse).
func (m *modelServer) gemini(w http.ResponseWriter, body []byte) {
	var req struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	toolBytes, ok := decodeRequest(w, body, &req, "generateContent")
	if !ok {
		return
	}
	var results []string
	var definitions []json.RawMessage
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				results = append(results, string(p.FunctionResponse))
			}
		}
	}
	for _, t := range req.Tools {
		definitions = append(definitions, t.FunctionDeclarations...)
	}
	step := m.record(modelRequest{Tools: toolsOf(definitions), ToolBytes: toolBytes, Results: results})
	part := map[string]any{"text": step.Text}
	if step.Tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": step.Tool, "args": step.Args}}
	}
	answer := map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "script",
	}
	startSSE(w)
	sse(w, "", answer)
}

// responses answers the OpenAI Responses API (POST /v1/responses) with
// its SSE events.
func (m *modelServer) responses(w http.ResponseWriter, body []byte) {
	var req struct {
		Tools []json.RawMessage `json:"tools"`
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	toolBytes, ok := decodeRequest(w, body, &req, "Responses")
	if !ok {
		return
	}
	var results []string
	for _, item := range req.Input {
		if item.Type == "function_call_output" {
			results = append(results, string(item.Output))
		}
	}
	// Codex offers each MCP server's tools in a namespace (mcp__hub),
	// which a call names beside the tool.
	var tools []modelTool
	for _, definition := range req.Tools {
		var namespace struct {
			Type, Name string
			Tools      []json.RawMessage
		}
		json.Unmarshal(definition, &namespace)
		if namespace.Type != "namespace" {
			tools = append(tools, toolsOf([]json.RawMessage{definition})...)
			continue
		}
		for _, tool := range toolsOf(namespace.Tools) {
			tool.Namespace = namespace.Name
			tools = append(tools, tool)
		}
	}
	step := m.record(modelRequest{Tools: tools, ToolBytes: toolBytes, Results: results})
	id := m.id()
	item := map[string]any{
		"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%04d", id), "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}},
	}
	if step.Tool != "" {
		args, _ := json.Marshal(step.Args)
		item = map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%04d", id), "call_id": fmt.Sprintf("call_%04d", id),
			"name": step.Tool, "arguments": string(args), "status": "completed",
		}
		if step.Namespace != "" {
			item["namespace"] = step.Namespace
		}
	}
	response := map[string]any{"id": fmt.Sprintf("resp_%04d", id), "object": "response", "model": "script", "status": "in_progress", "output": []any{}}
	startSSE(w)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": response})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	response["status"], response["output"] = "completed", []any{item}
	response["usage"] = map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": response})
}
