package mcphttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// 2026-07-28 over Streamable HTTP, each case as basic/transports/
// streamable-http says: the status, the JSON-RPC error code, the request's
// own id in every error, and no session minted or used.
func TestModernHTTP(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	hs := New(h, Options{NoAuth: true, Loopback: true}, testLogger())
	defer hs.Close()
	do := func(method, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		return w.Result(), w.Body.String()
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	// headers are a 2026-07-28 request's headers for method (and name).
	headers := func(method string, name ...string) map[string]string {
		h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if len(name) > 0 {
			h["Mcp-Name"] = name[0]
		}
		return h
	}
	with := func(h map[string]string, k, v string) map[string]string {
		h[k] = v
		return h
	}
	without := func(h map[string]string, k string) map[string]string {
		delete(h, k)
		return h
	}
	for _, tc := range []struct {
		name, body string
		header     map[string]string
		status     int
		want       []string
	}{
		{"served", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, headers("tools/list"),
			200, []string{`"id":1,"result"`, `"resultType":"complete"`}},
		{"a session id is ignored", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`,
			with(headers("tools/list"), headerSessionID, "no-such-session"), 200, []string{`"id":2,"result"`}},
		{"discover", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + meta + `}}`, headers("server/discover"),
			200, []string{`"supportedVersions":["2026-07-28"`}},
		{"no _meta", `{"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}}`, headers("server/discover"),
			400, []string{`"id":101`, `"code":-32602`}},
		{"no params", `{"jsonrpc":"2.0","id":"s","method":"server/discover"}`, headers("server/discover"),
			400, []string{`"id":"s"`, `"code":-32602`}},
		{"_meta without the version", `{"jsonrpc":"2.0","id":102,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`,
			headers("server/discover"), 400, []string{`"id":102`, `"code":-32602`}},
		{"_meta without capabilities", `{"jsonrpc":"2.0","id":104,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			headers("tools/list"), 400, []string{`"id":104`, `"code":-32602`}},
		{"unsupported version", `{"jsonrpc":"2.0","id":301,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			with(headers("tools/list"), "MCP-Protocol-Version", "2099-01-01"),
			400, []string{`"id":301`, `"code":-32022`, `"supported":["2026-07-28","2025-11-25"`, `"requested":"2099-01-01"`}},
		{"header and _meta disagree", `{"jsonrpc":"2.0","id":302,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			headers("tools/list"), 400, []string{`"id":302`, `"code":-32020`}},
		{"no version header", `{"jsonrpc":"2.0","id":303,"method":"tools/list","params":{` + meta + `}}`,
			without(headers("tools/list"), "MCP-Protocol-Version"), 400, []string{`"id":303`, `"code":-32020`}},
		{"no Mcp-Method", `{"jsonrpc":"2.0","id":304,"method":"tools/list","params":{` + meta + `}}`,
			without(headers("tools/list"), "Mcp-Method"), 400, []string{`"id":304`, `"code":-32020`}},
		{"Mcp-Method not the method", `{"jsonrpc":"2.0","id":305,"method":"tools/list","params":{` + meta + `}}`,
			headers("prompts/list"), 400, []string{`"id":305`, `"code":-32020`}},
		{"no Mcp-Name", `{"jsonrpc":"2.0","id":306,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},` + meta + `}}`,
			headers("tools/call"), 400, []string{`"id":306`, `"code":-32020`}},
		{"Mcp-Name not the name", `{"jsonrpc":"2.0","id":307,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},` + meta + `}}`,
			headers("tools/call", "f__other"), 400, []string{`"id":307`, `"code":-32020`}},
		{"Mcp-Name in Base64", `{"jsonrpc":"2.0","id":308,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},` + meta + `}}`,
			headers("tools/call", "=?base64?Zl9fZWNobw==?="), 200, []string{`"id":308,"result"`}},
		{"unknown method", `{"jsonrpc":"2.0","id":601,"method":"unknown/method","params":{` + meta + `}}`, headers("unknown/method"),
			404, []string{`"id":601`, `"code":-32601`}},
		{"unknown resource", `{"jsonrpc":"2.0","id":602,"method":"resources/read","params":{"uri":"nope://x",` + meta + `}}`,
			headers("resources/read", "nope://x"), 400, []string{`"id":602`, `"code":-32602`}},
		{"unknown tool", `{"jsonrpc":"2.0","id":603,"method":"tools/call","params":{"name":"nope","arguments":{},` + meta + `}}`,
			headers("tools/call", "nope"), 404, []string{`"id":603`, `"code":-32601`}},
	} {
		resp, body := do(http.MethodPost, tc.body, tc.header)
		ok := resp.StatusCode == tc.status
		for _, w := range tc.want {
			ok = ok && strings.Contains(body, w)
		}
		if !ok {
			t.Errorf("%s: %d %.400s; want %d with %q", tc.name, resp.StatusCode, body, tc.status, tc.want)
		}
		if s := resp.Header.Get(headerSessionID); s != "" {
			t.Errorf("%s: a session was minted: %s", tc.name, s)
		}
	}

	// The methods 2026-07-28 removed: 404 and -32601, and no session for
	// an initialize.
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
		resp, body := do(http.MethodPost, `{"jsonrpc":"2.0","id":500,"method":"`+m+`","params":{"uri":"fake://fake/res/1","level":"info","protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"},`+meta+`}}`, headers(m))
		if resp.StatusCode != 404 || !strings.Contains(body, `"id":500,"error":{"code":-32601`) || resp.Header.Get(headerSessionID) != "" {
			t.Errorf("removed %s: %d %s %v", m, resp.StatusCode, body, resp.Header)
		}
	}
	if n := len(h.Sessions().Info()); n != 0 {
		t.Errorf("%d sessions outlived their 2026-07-28 requests", n)
	}

	// GET and DELETE are not part of 2026-07-28.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		resp, _ := do(m, "", map[string]string{"MCP-Protocol-Version": "2026-07-28", headerSessionID: "x"})
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}

	// The legacy era: a request that needs a session and has none is
	// refused with its own id.
	for _, tc := range []struct {
		session string
		status  int
	}{{"", 400}, {"no-such-session", 404}} {
		resp, body := do(http.MethodPost, `{"jsonrpc":"2.0","id":"legacy","method":"tools/list"}`, map[string]string{headerSessionID: tc.session})
		if resp.StatusCode != tc.status || !strings.Contains(body, `"id":"legacy"`) {
			t.Errorf("legacy request, session %q: %d %s", tc.session, resp.StatusCode, body)
		}
	}
}

// Every SSE stream tells buffering proxies not to hold its events back.
func TestSSEUnbuffered(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	if err := newSSEWriter(w, Options{}.withDefaults().writeTimeout).start(nil); err != nil {
		t.Fatal(err)
	}
	if got := w.Result().Header.Get("X-Accel-Buffering"); got != "no" {
		t.Fatalf("X-Accel-Buffering %q", got)
	}
}

// What a 2026-07-28 request's refusal quotes of its headers and body (the
// versions, the method and name that disagree) and a 404's of a profile's
// name is a short prefix, marked as cut: 64 KiB headers were answered
// whole.
func TestHTTPRefusalsQuoteLittle(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	hs := New(h, Options{NoAuth: true, Loopback: true}, testLogger())
	defer hs.Close()
	long := strings.Repeat("z", 64<<10)
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	for _, tc := range []struct {
		name, path, body string
		header           map[string]string
		status           int
	}{
		{"versions that disagree", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-` + long + `",` + caps + `}}}`,
			map[string]string{"MCP-Protocol-Version": "2098-" + long, "Mcp-Method": "tools/list"}, 400},
		{"names that disagree", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a` + long + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "b" + long}, 400},
		{"no such profile", "/mcp/p/" + long, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil, 404},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1"+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		hs.ServeHTTP(w, req)
		if body := w.Body.String(); w.Code != tc.status || len(body) > 2<<10 || !strings.Contains(body, "zzz…") {
			t.Errorf("%s: %d, %d bytes: %.300s", tc.name, w.Code, len(body), body)
		}
	}
}
