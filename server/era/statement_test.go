package era

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// What a request's _meta states of its client: only a 2026-07-28 version
// makes it a statement, and what it states is read as it is, bounded
// where it is decoded.
func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		modern       bool
		caps         string // the capabilities stated, raw
		client       string // the client's name, "" for none
	}{
		{"no meta", `{"name":"x"}`, false, "", ""},
		{"legacy version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`, false, "", ""},
		{"modern", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"n","version":"1"}}}`, true, `{"roots":{}}`, "n"},
		{"escaped version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}`, true, "", ""},
		{"version no string", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, false, "", ""},
		{"meta no object", `{"_meta":"io.modelcontextprotocol/protocolVersion"}`, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, err := jsonrpc.ScanObject([]byte(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			st := StateOf(params, json.RawMessage(tc.params))
			if st.Modern != tc.modern || string(st.Capabilities) != tc.caps {
				t.Fatalf("modern %v, capabilities %s; want %v, %s", st.Modern, st.Capabilities, tc.modern, tc.caps)
			}
			name := ""
			if info := st.Info(); info != nil {
				name = info.Name
			}
			if name != tc.client {
				t.Errorf("client %q, want %q", name, tc.client)
			}
		})
	}
}

// Capabilities that do not decode count as none; only small ones are kept
// to recognise the next request's; a long client name is clipped.
func TestStatementCapsAndInfo(t *testing.T) {
	caps, keep := Statement{Modern: true, Capabilities: []byte(`{"sampling":7}`)}.Caps()
	if caps.Sampling != nil || keep == nil {
		t.Errorf("undecodable capabilities: %+v, kept %s", caps, keep)
	}
	big := `{"experimental":{"x":"` + strings.Repeat("a", 2*maxKeptStatement) + `"},"roots":{}}`
	caps, keep = Statement{Modern: true, Capabilities: []byte(big)}.Caps()
	if caps.Roots == nil || caps.Experimental != nil || keep != nil {
		t.Errorf("large capabilities: roots %v, experimental %d, kept %d bytes", caps.Roots, len(caps.Experimental), len(keep))
	}
	if st := (Statement{Capabilities: []byte(`{}`)}); !st.Same([]byte(`{}`)) || st.Same(nil) {
		t.Error("Same: the kept encoding is recognised, nothing kept is not")
	}
	info := Statement{ClientInfo: []byte(`{"name":"` + strings.Repeat("n", 2*clients.MaxClientText) + `"}`)}.Info()
	if info == nil || len(info.Name) != clients.MaxClientText {
		t.Errorf("client info %+v, want its name clipped to %d", info, clients.MaxClientText)
	}
	if (Statement{ClientInfo: []byte(`7`)}).Info() != nil {
		t.Error("client info that does not decode: want none")
	}
}

// What the hub serves of a request's statement (Served, which decides
// whether it becomes the session's) and what refuses the request (Check,
// and the era stage with Refusal) are one decision: over every kind of
// _meta, a statement is served exactly when Check lets a method of its
// era through, and each is refused with the code its first failing check
// gives.
func TestServedAgreesWithCheck(t *testing.T) {
	const v, c = `"io.modelcontextprotocol/protocolVersion":`, `"io.modelcontextprotocol/clientCapabilities":`
	for _, tc := range []struct {
		name, meta string
		code       int // Check's of tools/list, 0 when it passes
	}{
		{"served", `{` + v + `"2026-07-28",` + c + `{}}`, 0},
		{"no capabilities", `{` + v + `"2026-07-28"}`, jsonrpc.CodeInvalidParams},
		{"capabilities no object", `{` + v + `"2026-07-28",` + c + `[]}`, jsonrpc.CodeInvalidParams},
		{"capabilities null", `{` + v + `"2026-07-28",` + c + `null}`, jsonrpc.CodeInvalidParams},
		{"escaped version", `{` + v + `"2026\u002d07-28",` + c + `{}}`, 0},
		{"future version", `{` + v + `"2099-01-01",` + c + `{}}`, mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"future version, no capabilities", `{` + v + `"2099-01-01"}`, jsonrpc.CodeInvalidParams},
		{"draft version", `{` + v + `"DRAFT-2026-v1",` + c + `{}}`, mcp.UNSUPPORTED_PROTOCOL_VERSION},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"_meta":` + tc.meta + `}`
			params, err := jsonrpc.ScanObject([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			st := StateOf(params, json.RawMessage(raw))
			if !st.Modern {
				t.Fatalf("%s states no 2026-07-28 version", tc.meta)
			}
			e := st.Check("tools/list")
			code := 0
			if e != nil {
				code = e.Code
			}
			if code != tc.code {
				t.Errorf("Check: code %d (%v), want %d", code, e, tc.code)
			}
			if st.Served() != (e == nil) {
				t.Errorf("Served() %v, but Check refuses with %v", st.Served(), e)
			}
		})
	}
}
