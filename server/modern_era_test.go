package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// modernMeta is the _meta of a 2026-07-28 request of version v.
func modernMeta(v string) string {
	return fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}}`, v)
}

// TestModernRequestChecks drives the hub over stdio with 2026-07-28
// requests it must refuse as that version says (basic/versioning, the
// changelog's removed methods, SEP-2164), and their legacy twins that must
// be served as before.
func TestModernRequestChecks(t *testing.T) {
	t.Parallel()
	c := servePipes(t, fakeHub(t), StdioOptions{})
	type answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	ask := func(id int, method, params string) answer {
		t.Helper()
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		line := c.answer(fmt.Sprint(id))
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %s: %v", line, err)
		}
		return a
	}
	id := 0
	wantCode := func(method, params string, code int) answer {
		t.Helper()
		id++
		a := ask(id, method, params)
		if a.Error == nil || a.Error.Code != code {
			t.Errorf("%s %s: got %+v %s, want error %d", method, params, a.Error, a.Result, code)
		}
		return a
	}

	// _meta naming 2026-07-28 without the client's capabilities.
	wantCode("tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, mcp.INVALID_PARAMS)
	wantCode("tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, mcp.INVALID_PARAMS)

	// A version the hub does not serve: -32022 with what it serves.
	a := wantCode("tools/list", `{`+modernMeta("2099-01-01")+`}`, mcp.UNSUPPORTED_PROTOCOL_VERSION)
	if a.Error != nil {
		var data mcp.UnsupportedProtocolVersionData
		if err := json.Unmarshal(a.Error.Data, &data); err != nil || data.Requested != "2099-01-01" ||
			!slices.Equal(data.Supported, mcp.ValidProtocolVersions) {
			t.Errorf("unsupported version's data %s (%v)", a.Error.Data, err)
		}
	}

	// The methods 2026-07-28 removed, those of the handshake among them.
	for _, m := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "tasks/list", "tasks/result"} {
		wantCode(m, `{"uri":"file:///x","taskId":"t","level":"info",`+modernMeta("2026-07-28")+`}`, mcp.METHOD_NOT_FOUND)
	}

	// An unknown resource: -32602 in 2026-07-28, -32002 before.
	wantCode("resources/read", `{"uri":"nowhere:///x",`+modernMeta("2026-07-28")+`}`, mcp.INVALID_PARAMS)
	wantCode("resources/read", `{"uri":"nowhere:///x"}`, mcp.RESOURCE_NOT_FOUND)

	// The same requests in the legacy era are served as before.
	id++
	if a := ask(id, "ping", `{}`); a.Error != nil {
		t.Errorf("legacy ping: %+v", a.Error)
	}
	id++
	if a := ask(id, "tools/list", `{`+modernMeta("2026-07-28")+`}`); a.Error != nil || len(a.Result) == 0 {
		t.Errorf("modern tools/list: %+v", a.Error)
	}
}
