package fakeupstream

import (
	"encoding/json"
	"strings"
)

// The tools and the prompt the conformance suite's input-required-result
// scenarios call (its pre-release, SEP-2322), offered with -modern: each
// answers input_required as the scenario describes, and completes once
// its inputResponses are there. The requestState is the fake's own,
// unprotected: through the hub it is sealed inside the hub's state, which
// is what the tampered-state scenario tests.

// mrtrTools are the scenarios' tools.
func mrtrTools() []any {
	var ts []any
	for _, n := range []string{"elicitation", "sampling", "list_roots", "request_state", "multiple_inputs", "multi_round", "tampered_state", "capabilities"} {
		ts = append(ts, map[string]any{"name": "test_input_required_result_" + n, "description": "SEP-2322 conformance: " + n,
			"inputSchema": map[string]any{"type": "object"}})
	}
	return ts
}

// mrtrPrompt is the scenarios' prompt.
var mrtrPrompt = map[string]any{"name": "test_input_required_result_prompt", "description": "SEP-2322 conformance: a prompt that elicits"}

// mrtrParams are what a retry carries.
type mrtrParams struct {
	Name           string                     `json:"name"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
	Meta           struct {
		Caps map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

func elicit(message, field string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{"message": message,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{field: map[string]any{"type": "string"}}, "required": []string{field}}}}
}

var (
	sample     = map[string]any{"method": "sampling/createMessage", "params": map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "What is the capital of France?"}}}, "maxTokens": 100}}
	listRoots  = map[string]any{"method": "roots/list", "params": map[string]any{}}
	confirmAsk = map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "Please confirm",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"}}}}
)

// mrtrCall answers a call of one of mrtrTools, or of the prompt; false
// when name is neither.
func mrtrCall(req request) bool {
	var p mrtrParams
	_ = json.Unmarshal(req.Params, &p)
	if !strings.HasPrefix(p.Name, "test_input_required_result_") {
		return false
	}
	ask := func(requests map[string]any, state string) {
		r := map[string]any{"resultType": "input_required", "inputRequests": requests}
		if state != "" {
			r["requestState"] = state
		}
		reply(req.ID, r)
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if v := p.InputResponses[k]; len(v) == 0 || v[0] != '{' {
				return false
			}
		}
		return true
	}
	done := func(text string) {
		if req.Method == "prompts/get" {
			reply(req.ID, map[string]any{"resultType": "complete", "messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}})
			return
		}
		reply(req.ID, map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": text}}})
	}
	switch strings.TrimPrefix(p.Name, "test_input_required_result_") {
	case "elicitation":
		if !has("user_name") {
			ask(map[string]any{"user_name": elicit("What is your name?", "name")}, "")
			return true
		}
		done("Hello, " + string(p.InputResponses["user_name"]) + "!")
	case "sampling":
		if !has("capital_question") {
			ask(map[string]any{"capital_question": sample}, "")
			return true
		}
		done("sampled: " + string(p.InputResponses["capital_question"]))
	case "list_roots":
		if !has("client_roots") {
			ask(map[string]any{"client_roots": listRoots}, "")
			return true
		}
		done("roots: " + string(p.InputResponses["client_roots"]))
	case "request_state", "tampered_state":
		if !has("confirm") || p.RequestState != "fake-state-confirm" {
			ask(map[string]any{"confirm": confirmAsk}, "fake-state-confirm")
			return true
		}
		done("state-ok")
	case "multiple_inputs":
		if !has("user_name", "greeting", "client_roots") || p.RequestState != "fake-state-multiple" {
			ask(map[string]any{"user_name": elicit("What is your name?", "name"), "greeting": map[string]any{"method": "sampling/createMessage",
				"params": map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Generate a greeting"}}}, "maxTokens": 50}},
				"client_roots": listRoots}, "fake-state-multiple")
			return true
		}
		done("all inputs received")
	case "multi_round":
		switch {
		case p.RequestState == "fake-round-2" && has("step2"):
			done("multi-round complete")
		case p.RequestState == "fake-round-1" && has("step1"):
			ask(map[string]any{"step2": elicit("Step 2: What is your favorite color?", "color")}, "fake-round-2")
		default:
			ask(map[string]any{"step1": elicit("Step 1: What is your name?", "name")}, "fake-round-1")
		}
	case "capabilities":
		requests := map[string]any{}
		if p.Meta.Caps["sampling"] != nil {
			requests["capital_question"] = sample
		}
		if p.Meta.Caps["elicitation"] != nil {
			requests["user_name"] = elicit("What is your name?", "name")
		}
		if len(requests) == 0 || has("capital_question") || has("user_name") {
			done("capabilities respected")
			return true
		}
		ask(requests, "")
	case "prompt":
		if !has("user_context") {
			ask(map[string]any{"user_context": elicit("What context should the prompt use?", "context")}, "")
			return true
		}
		done("context: " + string(p.InputResponses["user_context"]))
	default:
		fail(req.ID, -32602, "Unknown tool: "+p.Name, nil)
	}
	return true
}
