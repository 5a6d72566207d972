package mcphttp

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A 2026-07-28 request without Mcp-Session-Id gets a session for itself
// alone, whose capabilities are the ones the request states in its _meta:
// an upstream's elicitation during the call is not refused as if the
// client could not answer it, nor sent to it as a request it has no
// session to answer: it comes back at once as the call's input_required
// round (the call is not held until the upstream's timeout).
func TestStatelessRequestCapabilitiesFromMeta(t *testing.T) {
	t.Parallel()
	_, _, base := isolationHub(t, "per-session")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second*await.Slow) // bounds a hang: an answer held for the call timeout is an elicitation, not input_required
	defer cancel()
	body := `{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"f__ask","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "f__ask")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"method":"elicitation/create","params"`) && !strings.Contains(sc.Text(), `"inputRequests"`) {
			t.Fatalf("an elicitation this client cannot answer: %s", sc.Text())
		}
		if strings.Contains(sc.Text(), `"id":"ask"`) {
			if !strings.Contains(sc.Text(), `"resultType":"input_required"`) || !strings.Contains(sc.Text(), `"method":"elicitation/create"`) {
				t.Errorf("answered: %s", sc.Text())
			}
			return
		}
	}
	t.Fatalf("no answer: %v", sc.Err())
}
