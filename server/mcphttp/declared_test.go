package mcphttp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// initializeWith is an initialize declaring caps (a JSON object).
func initializeWith(caps string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`
}

// declaredUpstream is what the fake upstream behind c's session was told
// in its initialize: the capabilities the hub declared for c.
func declaredUpstream(t *testing.T, c *httpClient) map[string]json.RawMessage {
	t.Helper()
	_, body := c.post(`{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"f__state","arguments":{}}}`)
	var m struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	var st struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.Result.Content) == 0 || json.Unmarshal([]byte(m.Result.Content[0].Text), &st) != nil {
		t.Fatalf("state: %s", body)
	}
	return st.Capabilities
}

// Over HTTP the hub declares upstream only what it can pass on: a
// connection of one session's own (isolation: per-session) is told
// exactly what that session's client declared, so that a client without
// URL elicitation (2025-11-25) is never shown a tool that needs it; a
// shared connection, which serves every client, is told form elicitation
// only, and an elicitation in URL mode is passed to a client that declared
// URL mode and refused for one that did not, as sampling is refused for a
// client without sampling.
func TestDeclaredElicitation(t *testing.T) {
	t.Parallel() // its own hubs and upstreams
	const (
		formOnly = `{"elicitation":{}}`
		both     = `{"elicitation":{"form":{},"url":{}},"sampling":{}}`
		none     = `{}`
	)
	client := func(base, caps string) *httpClient {
		c := &httpClient{t: t, base: base}
		c.post(initializeWith(caps))
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return c
	}
	t.Run("per-session", func(t *testing.T) {
		_, _, base := isolationHub(t, "per-session")
		for _, caps := range []string{formOnly, both, none} {
			got := declaredUpstream(t, client(base, caps))
			var want map[string]json.RawMessage
			json.Unmarshal([]byte(caps), &want)
			if fmt.Sprint(slices.Sorted(maps.Keys(got))) != fmt.Sprint(slices.Sorted(maps.Keys(want))) {
				b, _ := json.Marshal(got)
				t.Errorf("client declared %s, its own upstream was told %s", caps, b)
			}
			if url := strings.Contains(string(got["elicitation"]), `"url"`); url != strings.Contains(caps, `"url"`) {
				t.Errorf("client declared %s, its own upstream was told elicitation %s", caps, got["elicitation"])
			}
		}
	})
	t.Run("shared", func(t *testing.T) {
		_, _, base := isolationHub(t, "shared")
		form, urlToo := client(base, formOnly), client(base, both)
		if got := declaredUpstream(t, form); string(got["elicitation"]) != `{"form":{}}` {
			t.Errorf("shared upstream told elicitation %s, want form only", got["elicitation"])
		}
		ask := func(c *httpClient) string {
			_, body := c.post(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{"text":"url"}}}`)
			return body
		}
		if got := ask(form); !strings.Contains(got, "does not support elicitation/create in URL mode") {
			t.Errorf("URL elicitation for a client with form only: %.300s", got)
		}
		got := askAnsweringWith(t, urlToo, `{"text":"url"}`, "bob")
		if !strings.Contains(got, "bob") {
			t.Errorf("URL elicitation for a client that declared URL mode: %.300s", got)
		}
	})
}
