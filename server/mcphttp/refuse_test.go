package mcphttp

import (
	"bufio"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A request refused before its body is read (a wrong token, a foreign
// Origin) is answered at once and its connection closed, however slowly
// the client sends the body: a client that trickles it holds neither the
// answer nor the connection.
func TestRefusalNotHeldByATrickledBody(t *testing.T) {
	t.Parallel()
	face := New(fakeHub(t), Options{Token: "the-right-token-0123456789", AllowedOrigins: []string{"https://ok.example"}}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	for _, c := range []struct{ name, path, headers, status string }{
		{"a wrong token", "/mcp", "Authorization: Bearer wrong-token-0123456789\r\n", "401"},
		{"no token", "/mcp", "", "401"},
		{"a foreign Origin", "/mcp", "Origin: https://evil.example\r\nAuthorization: Bearer the-right-token-0123456789\r\n", "403"},
		{"no such path", "/nothing-here", "", "404"},
	} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: 100000\r\n\r\n{", c.path, ts.Listener.Addr(), c.headers)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // a byte every 100 ms: 100 KB would take hours
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second * await.Slow)) // the body would take hours
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, " "+c.status+" ") {
			t.Errorf("%s: %q %v; want %s at once, not after the body", c.name, line, err, c.status)
		}
		close(stop)
		<-done
		conn.Close()
	}
}
