package mcphttp

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// BenchmarkGETStreamNotification is one notification the hub sends a
// session, from Notify until the client has read it off its GET stream,
// one at a time: "memory" is a face without a store (the event log in
// memory), "store" one with a store (appended to PostgreSQL, on a local
// cluster, and delivered on the notice); their difference is what the
// relay costs a notification (docs/performance.md's figure).
func BenchmarkGETStreamNotification(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		h, _ := runHub(b, flatFakeYAML(b.TempDir(), "", ""), nil)
		face := New(h, Options{NoAuth: true}, testLogger())
		ts := httptest.NewServer(face)
		b.Cleanup(func() { ts.Close(); face.Close() })
		benchNotify(b, face, ts.URL)
	})
	b.Run("store", func(b *testing.B) {
		face, base := relayReplica(b, pgtest.Start(b), flatFakeYAML(b.TempDir(), "", ""))
		benchNotify(b, face, base)
	})
}

func benchNotify(b *testing.B, face *Server, base string) {
	post := func(session, body string) string {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get(headerSessionID)
	}
	session := post("", initializeMsg)
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET: %v %v", err, resp)
	}
	defer resp.Body.Close()
	var hs *httpSession
	face.sessions.mu.Lock()
	for _, x := range face.sessions.sessions {
		hs = x
	}
	face.sessions.mu.Unlock()
	waitFor(b, 5e9, "the GET stream", func() bool { return hs.st.standaloneOpen() })
	sc := bufio.NewScanner(resp.Body)
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"bench","data":"x"}}`)
	for b.Loop() {
		hs.Notify(context.Background(), msg)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: {") {
				break
			}
		}
	}
}
