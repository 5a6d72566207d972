package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

func TestWithMeta(t *testing.T) {
	t.Parallel()
	meta := []jsonrpc.Member{{Key: "v", Value: []byte(`"2026-07-28"`)}, {Key: "c", Value: []byte(`{}`)}}
	for _, tc := range []struct{ params, want string }{
		{``, `{"_meta":{"v":"2026-07-28","c":{}}}`},
		{`null`, `{"_meta":{"v":"2026-07-28","c":{}}}`},
		// Every byte of params kept; the _meta it has keeps its keys, ours
		// replace those of the same name.
		{`{ "name":"<b>&", "n":1.0 }`, `{ "name":"<b>&", "n":1.0,"_meta":{"v":"2026-07-28","c":{}} }`},
		{`{"_meta":{"progressToken":"\u00e9","v":"old"},"a":1e2}`, `{"_meta":{"progressToken":"\u00e9","v":"2026-07-28","c":{}},"a":1e2}`},
		{`[1,2]`, `[1,2]`},
	} {
		got, err := withMeta(json.RawMessage(tc.params), meta)
		if err != nil || string(got) != tc.want {
			t.Errorf("withMeta(%s) = %s, %v; want %s", tc.params, got, err, tc.want)
		}
	}
}

// peerConn is a conn whose server is the test: what the conn writes comes
// out of lines, what the test writes to w reaches the conn.
func peerConn(t *testing.T) (c *conn, lines *bufio.Scanner, w io.Writer) {
	t.Helper()
	toConn, fromTest := io.Pipe()
	fromConn, toTest := io.Pipe()
	c = &conn{logger: testLogger(t)}
	c.stream = jsonrpc.NewLineStream(toConn, toTest, 1<<20)
	c.rpc = jsonrpc.NewConn(c.stream, jsonrpc.ConnOptions{Quiet: true})
	c.rpc.Start()
	t.Cleanup(func() {
		fromTest.Close()
		fromConn.Close()
		c.close()
	})
	return c, bufio.NewScanner(fromConn), fromTest
}

// answerPeer writes the result of the request msg, as the server.
func answerPeer(w io.Writer, msg []byte, result string) {
	io.WriteString(w, string(jsonrpc.EncodeResult(jsonrpc.Field(msg, "id"), json.RawMessage(result)))+"\n")
}

// expect reads the conn's next message and checks its method.
func expect(t *testing.T, lines *bufio.Scanner, method string) []byte {
	t.Helper()
	if !lines.Scan() {
		t.Fatalf("no %s: %v", method, lines.Err())
	}
	msg := append([]byte(nil), lines.Bytes()...)
	if got := string(jsonrpc.Field(msg, "method")); got != `"`+method+`"` {
		t.Fatalf("got %s, want %s", msg, method)
	}
	return msg
}

// A stdio server that answers server/discover gets a 2026-07-28 session:
// every request then carries the _meta, spliced into the params.
func TestHandshakeDiscovers(t *testing.T) {
	t.Parallel()
	// In a bubble: the discover probe (5 s) runs on its clock, which a
	// busy machine does not move.
	synctest.Test(t, func(t *testing.T) {
		c, lines, w := peerConn(t)
		done := make(chan error, 1)
		go func() { done <- c.handshake(t.Context(), mcp.ClientCapabilities{}) }()
		msg := expect(t, lines, "server/discover")
		answerPeer(w, msg, `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}}`)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if c.version != mcp.LATEST_PROTOCOL_VERSION || c.init.Capabilities.Tools == nil {
			t.Fatalf("version %q, init %+v", c.version, c.init)
		}
		go func() {
			_, err := c.request(t.Context(), "tools/call", json.RawMessage(`{"name":"<x>"}`))
			done <- err
		}()
		msg = expect(t, lines, "tools/call")
		params := string(jsonrpc.Field(msg, "params"))
		want := `{"name":"<x>","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"dynamic-mcp","version":"dev"}}}`
		if params != want {
			t.Errorf("params\n got: %s\nwant: %s", params, want)
		}
		answerPeer(w, msg, `{}`)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A server that does not know server/discover gets initialize, in the
// newest version that has it, then notifications/initialized.
func TestHandshakeFallsBackToInitialize(t *testing.T) {
	t.Parallel()
	// In a bubble: the discover probe (5 s) runs on its clock, which a
	// busy machine does not move.
	synctest.Test(t, func(t *testing.T) {
		c, lines, w := peerConn(t)
		done := make(chan error, 1)
		go func() { done <- c.handshake(t.Context(), mcp.ClientCapabilities{}) }()
		msg := expect(t, lines, "server/discover")
		io.WriteString(w, string(jsonrpc.EncodeError(jsonrpc.Field(msg, "id"), jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no")))+"\n")
		msg = expect(t, lines, "initialize")
		if v := string(jsonrpc.Field(jsonrpc.Field(msg, "params"), "protocolVersion")); v != `"`+mcp.LATEST_LEGACY_PROTOCOL_VERSION+`"` {
			t.Errorf("initialize asks for %s", v)
		}
		answerPeer(w, msg, `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}`)
		expect(t, lines, "notifications/initialized")
		select {
		case err := <-done:
			if err != nil || c.version != "2025-06-18" || c.meta != nil {
				t.Fatalf("handshake: %v, version %q", err, c.version)
			}
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatal("the handshake did not end")
		}
	})
}

// A request of 2026-07-28 forwarded to a server of an earlier version
// loses the _meta members that name that version and the client: the
// server would take it for a request of a version the session is not.
func TestWithoutModernMeta(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ params, want string }{
		{`{"name":"x"}`, `{"name":"x"}`},
		{`{"name":"x","_meta":{"progressToken":1}}`, `{"name":"x","_meta":{"progressToken":1}}`},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"<&>","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"c"}},"arguments":{"n":1e2}}`,
			`{"_meta":{"progressToken":"<&>"},"arguments":{"n":1e2}}`},
		{`{"_meta":{"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
			`{"_meta":{"io.modelcontextprotocol/logLevel":"info"}}`},
		{`{"arguments":{"io.modelcontextprotocol/protocolVersion":"kept: not _meta"}}`, `{"arguments":{"io.modelcontextprotocol/protocolVersion":"kept: not _meta"}}`},
		{`[1]`, `[1]`},
	} {
		got, err := withoutModernMeta(json.RawMessage(tc.params))
		if err != nil || string(got) != tc.want {
			t.Errorf("withoutModernMeta(%s) = %s, %v; want %s", tc.params, got, err, tc.want)
		}
	}
}

// On a session of an earlier version, what a 2026-07-28 client put in
// _meta to say its version does not reach the server.
func TestLegacySessionDropsModernMeta(t *testing.T) {
	t.Parallel()
	c, lines, w := peerConn(t)
	c.version = "2025-11-25"
	done := make(chan error, 1)
	go func() {
		_, err := c.request(t.Context(), "tools/call", json.RawMessage(`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`))
		done <- err
	}()
	msg := expect(t, lines, "tools/call")
	if params := string(jsonrpc.Field(msg, "params")); params != `{"name":"x","_meta":{}}` {
		t.Errorf("params %s", params)
	}
	answerPeer(w, msg, `{}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A server/discover answer is a 2026-07-28 session only when its
// supportedVersions has the version asked in (or names none): a server
// that names other versions is asked again in the newest modern one the
// hub knows of them, gets initialize when only older ones are common, and
// fails with the versions it named when none is.
func TestDiscoverVersionNotOffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		supported string
		then      string // the next request, "" when none
		err       string
	}{
		{"none in common", `["2099-01-01"]`, "", `no protocol version in common: the server supports ["2099-01-01"]`},
		{"older only", `["2025-06-18","2099-01-01"]`, "initialize", ""},
		{"ours among others", `["2099-01-01","2026-07-28"]`, "", ""},
		{"none named", `[]`, "", ""},
		{"too many to say", `["` + strings.Repeat(`2099-01-01","`, 50000) + `2099-01-02"]`, "", `no protocol version in common: the server supports ["2099-01-01" "2099-01-01"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { // the discover probe on the bubble's clock
				c, lines, w := peerConn(t)
				done := make(chan error, 1)
				go func() { done <- c.handshake(t.Context(), mcp.ClientCapabilities{}) }()
				msg := expect(t, lines, "server/discover")
				answerPeer(w, msg, `{"supportedVersions":`+tc.supported+`,"capabilities":{}}`)
				if tc.then != "" {
					msg = expect(t, lines, tc.then)
					answerPeer(w, msg, `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}`)
					expect(t, lines, "notifications/initialized")
				}
				err := <-done
				switch {
				case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || len(err.Error()) > 1000):
					t.Fatalf("handshake: %.2000v; want %q, in under 1000 bytes", err, tc.err)
				case tc.err == "" && err != nil:
					t.Fatal(err)
				case tc.err == "" && tc.then == "" && c.version != mcp.LATEST_PROTOCOL_VERSION:
					t.Fatalf("version %q", c.version)
				case tc.then != "" && c.version != "2025-06-18":
					t.Fatalf("version %q", c.version)
				}
			})
		})
	}
}

// shortHandshake starts a handshake under a connect timeout shorter than
// the discover probe (4.4 s, in a synctest bubble's time: no machine is
// slow there); done yields its end, at the time the handshake returned,
// and the conn is closed after it when it failed (so a wait for a message
// that will not come ends).
func shortHandshake(t *testing.T) (c *conn, lines *bufio.Scanner, w io.Writer, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4400*time.Millisecond)
	t.Cleanup(cancel)
	c, lines, w = peerConn(t)
	ended := make(chan error, 1)
	go func() {
		err := c.handshake(ctx, mcp.ClientCapabilities{})
		ended <- err // before the close, which may wait for a write no one reads: not the handshake's time
		if err != nil {
			c.close()
		}
	}()
	return c, lines, w, ended
}

// A connect timeout shorter than the discover probe still leaves
// initialize its time: the probe takes half of what is left of it, so a
// server that ignores server/discover connects on the first try.
func TestDiscoverProbeCappedByConnectTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, lines, w, done := shortHandshake(t)
		expect(t, lines, "server/discover") // never answered
		msg := expect(t, lines, "initialize")
		answerPeer(w, msg, `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}`)
		expect(t, lines, "notifications/cancelled") // the discover, given up
		expect(t, lines, "notifications/initialized")
		if err := <-done; err != nil || c.version != "2025-06-18" {
			t.Fatalf("handshake: %v, version %q", err, c.version)
		}
	})
}

// A server that ignores server/discover and refuses the initialize the
// probe sent fails with its refusal soon after, not with a connect
// timeout at the end of it.
func TestDiscoverIgnoredInitializeRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, lines, w, done := shortHandshake(t)
		expect(t, lines, "server/discover") // never answered
		msg := expect(t, lines, "initialize")
		io.WriteString(w, string(jsonrpc.EncodeError(jsonrpc.Field(msg, "id"), jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "bad capabilities")))+"\n")
		refused := time.Now()
		// The bubble's clock: the 1 s grace for a discover answer, not
		// the 2.2 s left of the connect timeout.
		if err := <-done; err == nil || !strings.Contains(err.Error(), "bad capabilities") || time.Since(refused) > 1500*time.Millisecond {
			t.Fatalf("handshake: %v, %s after the refusal", err, time.Since(refused))
		}
	})
}

// A 2026-07-28 server that answers server/discover only after the probe
// sent initialize (cut short by a short connect timeout) gets its
// session, whether it refuses the initialize before or after, or answers
// it too after the discover (a server of both versions that answers in
// order; its answers read together). One that answers the initialize
// first and the discover at once after gets either session: the discover
// is given up once initialize is answered, and whether its answer was
// read by then is the scheduler's pick (a stress run saw both).
func TestDiscoverAnsweredAfterInitializeSent(t *testing.T) {
	t.Parallel()
	const both = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"both","version":"1"}}`
	for _, tc := range []struct {
		name   string
		first  bool   // the initialize's answer comes before the discover's
		init   string // its result; "" refuses it
		either bool   // the initialize's session will do too
	}{
		{"initialize refused after", false, "", false},
		{"initialize refused first", true, "", false},
		{"initialize answered after", false, both, false},
		{"initialize answered first", true, both, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				c, lines, w, done := shortHandshake(t)
				discover := expect(t, lines, "server/discover")
				initialize := expect(t, lines, "initialize")
				var answers bytes.Buffer
				if tc.init != "" {
					answers.Write(jsonrpc.EncodeResult(jsonrpc.Field(initialize, "id"), json.RawMessage(tc.init)))
				} else {
					answers.Write(jsonrpc.EncodeError(jsonrpc.Field(initialize, "id"), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "initialize is not of 2026-07-28")))
				}
				answers.WriteByte('\n')
				discovered := string(jsonrpc.EncodeResult(jsonrpc.Field(discover, "id"), json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`))) + "\n"
				if tc.first {
					io.WriteString(w, answers.String()+discovered) // one write: read together
				} else {
					io.WriteString(w, discovered+answers.String())
				}
				err := <-done
				if ok := c.version == mcp.LATEST_PROTOCOL_VERSION || tc.either && c.version == "2025-11-25"; err != nil || !ok {
					t.Fatalf("handshake: %v, version %q", err, c.version)
				}
			})
		})
	}
}
