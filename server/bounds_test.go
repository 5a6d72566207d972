package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// facePeerStub is a Peer for sessions the test opens itself.
type facePeerStub struct{}

func (facePeerStub) Notify(context.Context, []byte) {}
func (facePeerStub) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, ErrClientGone
}
func (facePeerStub) Listening(context.Context) {}
func (facePeerStub) Dropped() uint64           { return 0 }
func (facePeerStub) Answering() int            { return 0 }
func (facePeerStub) Client() string            { return "" }

// hugeInitialize is an initialize of about 1 MiB: 23,000 members in
// capabilities.experimental and a 512 KiB client name. Kept whole, they
// would take megabytes per session, far over the bound; ten times the
// members (5 MiB, under the message limit) took minutes under -race and
// showed the same.
func hugeInitialize() []byte {
	var b strings.Builder
	b.WriteString(`{"protocolVersion":"2025-06-18","clientInfo":{"name":"`)
	b.WriteString(strings.Repeat("n", 512<<10))
	b.WriteString(`","version":"1"},"capabilities":{"roots":{"listChanged":true},"experimental":{`)
	for i := range 23_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"c%06d":{"v":%d}`, i, i)
	}
	b.WriteString(`}}}`)
	return []byte(b.String())
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// What one initialize declares is kept bounded for the session's life:
// 23,000 members of capabilities.experimental leave the hub under 256
// KiB more per session (230,000 each kept ~100 MB before), the client's
// name is clipped, and what is kept still says what the client can do.
func TestInitializeKeptBounded(t *testing.T) {
	// It measures the process's heap: in a process of its own.
	if !inProcessOfItsOwn(t) {
		return
	}
	h := newTestHub(config.ModeFlat)
	h.Run()
	defer h.mgr.Close()
	defer h.Close()
	params := hugeInitialize()
	const sessions = 3
	before := heapAfterGC()
	var open []*Session
	for i := range sessions {
		s, err := h.Open(fmt.Sprintf("s%d", i), "streamable-http", facePeerStub{})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
		raw := append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`), params...), '}')
		if _, err := s.Request(context.Background(), &jsonrpc.Message{ID: json.RawMessage("1"), Method: "initialize", Params: params, Raw: raw}); err != nil {
			t.Fatal(err)
		}
	}
	growth := (int64(heapAfterGC()) - int64(before)) / sessions
	t.Logf("heap growth per session: %d KiB", growth>>10)
	if growth > 256<<10 {
		t.Errorf("heap grew %d KiB per session after an initialize of %d KiB, want under 256 KiB", growth>>10, len(params)>>10)
	}
	for _, info := range h.Sessions().Info() {
		if len(info.ClientName) > clients.MaxClientText {
			t.Errorf("client name kept as %d bytes, want at most %d", len(info.ClientName), clients.MaxClientText)
		}
		if info.Capabilities.Roots == nil || !info.Capabilities.Roots.ListChanged {
			t.Errorf("roots capability lost: %+v", info.Capabilities.Roots)
		}
		caps, _ := json.Marshal(info.Capabilities)
		if len(caps) > 2*clients.MaxCapabilityBytes {
			t.Errorf("capabilities marshal to %d bytes, want at most %d", len(caps), 2*clients.MaxCapabilityBytes)
		}
	}
	for _, s := range open {
		s.Close()
	}
}

// A 2026-07-28 request whose _meta names a protocol version the hub does
// not serve is refused (-32022), and leaves the session as it was: a
// version of a mebibyte ("2026-07-28" and more sorts as modern) was
// kept as the session's for its life, and the request's capabilities and
// client info replaced what the client had stated before.
func TestRefusedVersionNotKept(t *testing.T) {
	h := newTestHub(config.ModeFlat)
	h.Run()
	defer h.mgr.Close()
	defer h.Close()
	s, err := h.Open("s", "stdio", facePeerStub{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	request := func(version, name string) error {
		params := json.RawMessage(fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}}`, version, name))
		raw := append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`), params...), '}')
		_, err := s.Request(context.Background(), &jsonrpc.Message{ID: json.RawMessage("1"), Method: "tools/list", Params: params, Raw: raw})
		return err
	}
	if err := request("2026-07-28", "first"); err != nil {
		t.Fatal(err)
	}
	huge := "2026-07-28" + strings.Repeat("x", 1<<20)
	var refusal *jsonrpc.Error
	if err := request(huge, strings.Repeat("n", 100)); !errors.As(err, &refusal) || refusal.Code != -32022 {
		t.Fatalf("a request of version %.20s...: %v, want -32022", huge, err)
	}
	// A request of a served version that states no capabilities is
	// refused too (-32602), and leaves the session's as they were.
	noCaps := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"second","version":"1"}}}`)
	if _, err := s.Request(context.Background(), &jsonrpc.Message{ID: json.RawMessage("2"), Method: "tools/list", Params: noCaps,
		Raw: append(append([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":`), noCaps...), '}')}); !errors.As(err, &refusal) || refusal.Code != -32602 {
		t.Fatalf("a request without capabilities: %v, want -32602", err)
	}
	info := h.Sessions().Info()
	if len(info) != 1 || info[0].ProtocolVersion != "2026-07-28" || info[0].ClientName != "first" {
		v := info[0].ProtocolVersion
		t.Errorf("after the refused requests the session's version is %d bytes (%.20s...), its client %q", len(v), v, info[0].ClientName)
	}
	if caps, _ := s.sess.ClientCapabilities(); caps.Roots == nil {
		t.Errorf("after the refused request without capabilities the session's are %+v, want the roots stated before", caps)
	}
	// A legacy session's request of a version that only sorts as modern
	// is refused, and the session stays legacy (told of list changes).
	l, err := h.Open("l", "stdio", facePeerStub{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	future := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`)
	if _, err := l.Request(context.Background(), &jsonrpc.Message{ID: json.RawMessage("1"), Method: "tools/list", Params: future,
		Raw: append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":`), future...), '}')}); !errors.As(err, &refusal) || refusal.Code != -32022 {
		t.Fatalf("a request of version 2099-01-01: %v, want -32022", err)
	}
	if l.sess.Modern() {
		t.Error("a refused request of version 2099-01-01 made its legacy session a 2026-07-28 one (no more list_changed)")
	}
}

// A subscriptions/listen is checked as any 2026-07-28 request is, though
// it bypasses the request path: one without that version (a legacy
// client's) is refused -32601, one stating a version the hub does not
// serve -32022, one without capabilities -32602; and each leaves its
// legacy session as it was, told of list changes unasked. Such listens
// were served, and made the session a 2026-07-28 one for its life.
func TestRefusedListenLeavesSession(t *testing.T) {
	h := newTestHub(config.ModeFlat)
	h.Run()
	defer h.mgr.Close()
	defer h.Close()
	for i, tc := range []struct {
		meta string
		code int
	}{
		{``, -32601},
		{`"_meta":{},`, -32601},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}},`, -32022},
		{`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},`, -32602},
	} {
		l, err := h.Open(fmt.Sprintf("l%d", i), "stdio", facePeerStub{})
		if err != nil {
			t.Fatal(err)
		}
		// Nothing to listen for: a listen served ends at once.
		params := json.RawMessage(`{` + tc.meta + `"notifications":{}}`)
		res, err := l.Request(context.Background(), &jsonrpc.Message{ID: json.RawMessage(`"L"`), Method: "subscriptions/listen", Params: params,
			Raw: append(append([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":`), params...), '}')})
		var refusal *jsonrpc.Error
		if !errors.As(err, &refusal) || refusal.Code != tc.code {
			t.Errorf("a listen of params %s: %s %v, want %d", params, res, err, tc.code)
		}
		if l.sess.Modern() {
			t.Errorf("a refused listen of params %s made its legacy session a 2026-07-28 one (no more list_changed)", params)
		}
		l.Close()
	}
}
