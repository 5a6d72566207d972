package mcphttp

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// A 2026-07-28 request without Mcp-Session-Id gets a session for itself
// alone, whose capabilities are the ones the request states in its _meta:
// an upstream's elicitation during the call is passed to the client on
// the call's POST, not refused as if the client could not answer it.
func TestStatelessRequestCapabilitiesFromMeta(t *testing.T) {
	t.Parallel()
	_, _, base := isolationHub(t, "per-session")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // the elicitation is not answered: the call is dropped
	body := `{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"method":"elicitation/create"`) {
			return
		}
		if strings.Contains(sc.Text(), `"id":"ask"`) {
			t.Fatalf("answered without asking the client: %s", sc.Text())
		}
	}
	t.Fatalf("no elicitation and no answer: %v", sc.Err())
}
