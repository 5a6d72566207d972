package mcphttp

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

var (
	sealKey1 = bytes.Repeat([]byte{0x11}, 32)
	sealKey2 = bytes.Repeat([]byte{0x22}, 32)
)

// replica serves a hub of its own (the same config as every other
// replica's) with the credentials a and b and keys as session keys.
func replica(t *testing.T, keys ...[]byte) (*Server, *server.Hub, string) {
	h := fakeHub(t)
	face := New(h, Options{Tokens: map[string]string{"a": tokenA, "b": tokenB}, SessionKeys: keys}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	return face, h, ts.URL + "/mcp"
}

const echoCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`

// initializeOn initializes a session of token at url and returns its id.
func initializeOn(t *testing.T, url, token string) string {
	t.Helper()
	code, id, body := call(t, http.MethodPost, url, token, "", initializeMsg)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", code, id, body)
	}
	if code, _, body := call(t, http.MethodPost, url, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return id
}

// With http.session_keys, a session initialized on one replica goes on at
// another that never saw it, without a new initialize: the call is
// answered, and the other replica's hub has the session as the first had
// it (its id, client, protocol version, capabilities and caller); its GET
// stream opens there too.
func TestSealedSessionResumesOnAnotherReplica(t *testing.T) {
	t.Parallel()
	_, hubA, urlA := replica(t, sealKey1)
	_, hubB, urlB := replica(t, sealKey1)
	id := initializeOn(t, urlA, tokenA)
	if _, err := hex.DecodeString(id); err == nil {
		t.Fatalf("session id %q is not sealed", id)
	}
	code, again, body := call(t, http.MethodPost, urlB, tokenA, id, echoCall)
	if code != http.StatusOK || !strings.Contains(body, `"text":"hi"`) || again != "" {
		t.Fatalf("call at B: %d %q %s", code, again, body)
	}
	var a, b routes.SessionInfo
	for _, s := range hubA.Sessions().Info() {
		if s.Transport == "streamable-http" {
			a = s
		}
	}
	for _, s := range hubB.Sessions().Info() {
		if s.Transport == "streamable-http" {
			b = s
		}
	}
	if b.ID == "" || b.ID != a.ID || b.ClientName != "t" || b.ClientVersion != "1" || b.ProtocolVersion != "2025-06-18" ||
		b.Capabilities.Roots == nil || !b.Capabilities.Roots.ListChanged || b.Subject != "token:a" || b.Subject != a.Subject {
		t.Errorf("B's session %+v, A's %+v", b, a)
	}
	// More calls at B use the session B has now; A's goes on too.
	for _, url := range []string{urlB, urlA, urlB} {
		if code, _, body := call(t, http.MethodPost, url, tokenA, id, echoCall); code != http.StatusOK {
			t.Fatalf("call at %s: %d %s", url, code, body)
		}
	}
	if n := len(hubB.Sessions().Info()); n != 1 {
		t.Errorf("B has %d sessions, want the one resumed once", n)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, urlB, nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, id)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream at B: %v %v", err, resp)
	}
	resp.Body.Close()
}

// A sealed id opens for its own credential only, under a key of the list,
// until it expires: tampered, another credential's, expired, or sealed
// under a key no longer listed, it is 404 exactly as an id never handed
// out; so is the id of a session its client ended with DELETE, at the
// replica that ended it.
func TestSealedSessionRefusals(t *testing.T) {
	t.Parallel()
	faceA, _, urlA := replica(t, sealKey1)
	faceB, _, urlB := replica(t, sealKey1)
	_, _, urlOther := replica(t, sealKey2)
	id := initializeOn(t, urlA, tokenA)
	_, unknownBody := func() (int, string) {
		code, _, body := call(t, http.MethodPost, urlB, tokenA, "00000000000000000000000000000000", echoCall)
		return code, body
	}()
	raw, _ := base64.RawURLEncoding.DecodeString(id)
	raw[len(raw)/2] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(raw)
	for _, tc := range []struct {
		name, url, token, id string
	}{
		{"tampered at A", urlA, tokenA, tampered},
		{"tampered at B", urlB, tokenA, tampered},
		{"another credential at A", urlA, tokenB, id},
		{"another credential at B", urlB, tokenB, id},
		{"key not listed", urlOther, tokenA, id},
		{"at another profile's URL", strings.TrimSuffix(urlB, "/mcp") + "/mcp/p/nope", tokenA, id},
	} {
		code, _, body := call(t, http.MethodPost, tc.url, tc.token, tc.id, echoCall)
		if strings.Contains(tc.name, "profile") {
			if code != http.StatusNotFound {
				t.Errorf("%s: %d %s", tc.name, code, body)
			}
			continue
		}
		if code != http.StatusNotFound || body != unknownBody {
			t.Errorf("%s: %d %s, want 404 %s", tc.name, code, body, unknownBody)
		}
	}
	// Expired: at a replica whose clock is past the id's lifetime, and at
	// A, which has the session live.
	later := func() time.Time { return time.Now().Add(sealedLifetime + time.Minute) }
	faceA.now, faceB.now = later, later
	for _, url := range []string{urlA, urlB} {
		if code, _, body := call(t, http.MethodPost, url, tokenA, id, echoCall); code != http.StatusNotFound || body != unknownBody {
			t.Errorf("expired at %s: %d %s", url, code, body)
		}
	}
	faceA.now, faceB.now = time.Now, time.Now
	if code, _, body := call(t, http.MethodPost, urlB, tokenA, id, echoCall); code != http.StatusOK {
		t.Fatalf("unexpired at B: %d %s", code, body)
	}
	// Ended by DELETE at B: B does not resume it again.
	if code, _, body := call(t, http.MethodDelete, urlB, tokenA, id, ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _, body := call(t, http.MethodPost, urlB, tokenA, id, echoCall); code != http.StatusNotFound {
		t.Errorf("after DELETE at B: %d %s", code, body)
	}
}

// Keys rotate: a replica with [new, old] opens ids sealed under old and
// seals new ones under new, which a replica that has only old refuses.
func TestSealedSessionKeyRotation(t *testing.T) {
	t.Parallel()
	_, _, urlOld := replica(t, sealKey1)
	_, _, urlNew := replica(t, sealKey2, sealKey1)
	oldID := initializeOn(t, urlOld, tokenA)
	if code, _, body := call(t, http.MethodPost, urlNew, tokenA, oldID, echoCall); code != http.StatusOK {
		t.Fatalf("an id of the old key at the rotated replica: %d %s", code, body)
	}
	newID := initializeOn(t, urlNew, tokenA)
	raw, err := base64.RawURLEncoding.DecodeString(newID)
	if sum := sha256.Sum256(sealKey2); err != nil || raw[0] != sum[0] {
		t.Fatalf("new id %q not sealed under the first key", newID)
	}
	if code, _, body := call(t, http.MethodPost, urlOld, tokenA, newID, echoCall); code != http.StatusNotFound {
		t.Errorf("an id of the new key at a replica without it: %d %s", code, body)
	}
}

// Without session keys, ids are random and a session lives in the
// replica that made it: another one does not know it (today's face).
func TestUnsealedSessionStaysOnItsReplica(t *testing.T) {
	t.Parallel()
	_, _, urlA := replica(t)
	_, _, urlB := replica(t)
	id := initializeOn(t, urlA, tokenA)
	if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
		t.Errorf("id %q", id)
	}
	if code, _, body := call(t, http.MethodPost, urlB, tokenA, id, echoCall); code != http.StatusNotFound {
		t.Errorf("at B: %d %s", code, body)
	}
	if code, _, body := call(t, http.MethodPost, urlA, tokenA, id, echoCall); code != http.StatusOK {
		t.Errorf("at A: %d %s", code, body)
	}
}

// identityReplica serves, as identityHub does, a hub whose callers sign in
// with is's tokens (admins see the profile admin, others reader), with
// session keys: one replica of several.
func identityReplica(t *testing.T, is *testIssuer, keys ...[]byte) (*server.Hub, string) {
	yaml := fmt.Sprintf(`mode: flat
state_dir: %q
audit: { path: "off" }
settings: { call_timeout: 5s }
profiles:
  admin: { groups: [f], mode: flat }
  reader: { groups: [f], mode: dynamic }
http:
  auth:
    issuer: %s
    audience: %s
    profiles:
      - { claim: groups, value: admins, profile: admin }
    default_profile: reader
groups:
  f: { description: fake, command: %q }
`, t.TempDir(), is.srv.URL, testAudience, fakeBin)
	h, _ := runHub(t, yaml, nil)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	face := New(h, Options{Auth: cfg.HTTP.Auth, SessionKeys: keys}, testLogger())
	ts := httptest.NewServer(face)
	t.Cleanup(func() { ts.Close(); face.Close() })
	return h, ts.URL
}

// A caller signed in with a JWT keeps, at the replica that resumes its
// session, who it is and the profile its claims chose; a session opened
// at a profile's URL is resumed there only; another caller cannot use its
// id.
func TestSealedSessionKeepsCallerAndProfile(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	_, baseA := identityReplica(t, is, sealKey1)
	hubB, baseB := identityReplica(t, is, sealKey1)
	aliceToken, bobToken := is.token(t, "alice", "Alice", testAudience, "admins"), is.token(t, "bob", "Bob", testAudience, "docs")
	alice := initializeOn(t, baseA+"/mcp", aliceToken)
	bob := initializeOn(t, baseA+"/mcp/p/reader", bobToken)
	// Alice's profile is admin, flat: f__echo is listed at B.
	if code, _, body := call(t, http.MethodPost, baseB+"/mcp", aliceToken, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, `"f__echo"`) {
		t.Fatalf("alice's tools at B: %d %s", code, body)
	}
	// Bob's, reader, is dynamic, at its URL only.
	if code, _, body := call(t, http.MethodPost, baseB+"/mcp/p/reader", bobToken, bob, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, `"call_dynamic_tool"`) {
		t.Fatalf("bob's tools at B: %d %s", code, body)
	}
	for _, tc := range []struct{ name, url, token, id string }{
		{"bob's session at /mcp", baseB + "/mcp", bobToken, bob},
		{"bob's session at /mcp/p/admin", baseB + "/mcp/p/admin", bobToken, bob},
		{"alice's id with bob's token", baseB + "/mcp", bobToken, alice},
		{"bob's id with alice's token", baseB + "/mcp/p/reader", aliceToken, bob},
	} {
		if code, _, body := call(t, http.MethodPost, tc.url, tc.token, tc.id, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusNotFound {
			t.Errorf("%s: %d %s", tc.name, code, body)
		}
	}
	got := map[string]routes.SessionInfo{}
	for _, s := range hubB.Sessions().Info() {
		got[s.User] = s
	}
	if a, b := got["Alice"], got["Bob"]; a.Subject != "jwt:alice" || a.Profile != "admin" || b.Subject != "jwt:bob" || b.Profile != "reader" {
		t.Errorf("B's sessions: %+v", got)
	}
}
