package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// vaultState is a state directory whose vault (its key in a file there)
// holds secrets.
func vaultState(t *testing.T, secrets map[string]string) string {
	t.Helper()
	state := t.TempDir()
	key := bytes.Repeat([]byte{7}, vault.KeySize)
	if err := os.WriteFile(filepath.Join(state, vault.KeyFile), []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	v, _ := vault.New(key, "test")
	for name, value := range secrets {
		if err := vault.NewSecrets(state, v).Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// closingListener is a server that takes each connection and closes it at
// once: an upstream that is down, at an address the test keeps.
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// A resolved ${secret:NAME} reaches no client in any form, whichever way
// the hub would pass it on: why a group is unavailable (a child that
// prints its key on stderr and exits; a url: with the key in its query
// while the server is down), in the meta-tool's description, in a call's
// answer and in the status the inspector reads; a server's sampling and
// elicitation requests; a tool's JSON-in-text result, escaped twice and
// three times.
func TestSecretsReachNoClient(t *testing.T) {
	t.Parallel()
	const (
		plain  = "sk-reason-secret-41"
		quoted = `sk-"deep"\secret-42`
	)
	state := vaultState(t, map[string]string{"K": plain, "Q": quoted})
	yaml := fmt.Sprintf(`mode: dynamic
state_dir: %q
audit: {path: "off"}
settings: {call_timeout: 10s}
groups:
  f:
    description: fake
    command: %q
    env: { DMCP_TEST_K: "${secret:K}", DMCP_TEST_Q: "${secret:Q}" }
  leak:
    description: prints its key on stderr
    command: sh
    args: ["-c", "echo leaked $$DMCP_TEST_LEAK >&2; exit 1"]
    env: { DMCP_TEST_LEAK: "${secret:K}" }
  down:
    description: down, its key in its URL
    url: "http://%s/mcp?key=${secret:K}"
`, state, fakeBin, closingListener(t))
	h, mgr := runHub(t, yaml, false)
	c := servePipes(t, h, StdioOptions{})
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	leaks := func(s string) bool { return strings.Contains(s, "reason-secret") || strings.Contains(s, "deep") }

	// Why the groups are down, once both have failed (either may be
	// trying again, "starting", when asked).
	failed := func(group string) bool {
		for _, g := range mgr.Groups() {
			if g.Config.Name == group {
				return g.Servers[0].Status().State == upstream.StateFailed
			}
		}
		return false
	}
	id := 0
	ask := func(method, params string) string {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		return c.answer(fmt.Sprint(id))
	}
	var list string
	await.For(t, 20*time.Second, "both groups down, with their reasons", func() bool {
		list = ask("tools/list", `{}`)
		return strings.Contains(list, "- leak: prints its key on stderr (unavailable: exited") &&
			strings.Contains(list, "- down: down, its key in its URL (unavailable: ")
	})
	if leaks(list) || !strings.Contains(list, "leaked [secret:K]") {
		t.Errorf("tools/list:\n%s", list)
	}
	for _, group := range []string{"leak", "down"} {
		var answer string
		await.For(t, 20*time.Second, group+" failed, called", func() bool {
			answer = ask("tools/call", `{"name":"call_dynamic_tool","arguments":{"group":"`+group+`","name":"x","args":{}}}`)
			return failed(group) && strings.Contains(answer, "is unavailable")
		})
		if leaks(answer) || !strings.Contains(answer, "[secret:K]") {
			t.Errorf("a call to %s: %s", group, answer)
		}
	}
	// What the inspector reads: the status, the child's stderr lines.
	for _, s := range mgr.Servers() {
		st := s.Status()
		if st.Err == nil {
			continue
		}
		var stderr []string
		if exit := (*transport.ExitError)(nil); errors.As(st.Err, &exit) {
			stderr = exit.Stderr
		}
		if leaks(st.Err.Error()) || leaks(strings.Join(stderr, "\n")) {
			t.Errorf("status of %s: %v (stderr %q)", s.Config.ID(), st.Err, stderr)
		}
	}

	// A server's questions to the client.
	for _, tc := range []struct{ text, method, answer string }{
		{"env:DMCP_TEST_K", "elicitation/create", `{"action":"decline"}`},
		{"sample:DMCP_TEST_K", "sampling/createMessage", `{"role":"assistant","content":{"type":"text","text":"no"},"model":"m"}`},
	} {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"f","name":"ask","args":{"text":%q}}}}`, id, tc.text))
		all := c.readUntil(func(line string) bool { return strings.Contains(line, `"method":"`+tc.method+`"`) })
		line := all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
		if leaks(line) || !strings.Contains(line, "The key is [secret:K]") {
			t.Errorf("%s reached the client as %s", tc.method, line)
		}
		var req struct{ ID json.RawMessage }
		mustJSON(t, line, &req)
		c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + tc.answer + `}`)
		c.answer(fmt.Sprint(id))
	}

	// A tool's JSON-in-text result: the value escaped once in the text,
	// twice on the wire; and once more.
	inner, _ := json.Marshal(map[string]string{"key": quoted})
	twice, _ := json.Marshal(string(inner))
	for name, text := range map[string]string{"twice": string(inner), "three times": string(twice)} {
		arg, _ := json.Marshal(text)
		answer := ask("tools/call", `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":`+string(arg)+`}}}`)
		if leaks(answer) || !strings.Contains(answer, "[secret:Q]") {
			t.Errorf("a result with the value escaped %s: %s", name, answer)
		}
	}
}
