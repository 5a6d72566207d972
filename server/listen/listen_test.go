package listen

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// fakeSession is a session that records what it is sent.
type fakeSession struct {
	lists *State
	gone  chan struct{}
	mu    sync.Mutex
	sent  []string
}

func newFakeSession() *fakeSession {
	return &fakeSession{lists: NewState(), gone: make(chan struct{})}
}

func (s *fakeSession) ID() string            { return "a" }
func (s *fakeSession) Lists() *State         { return s.lists }
func (s *fakeSession) Gone() <-chan struct{} { return s.gone }
func (s *fakeSession) Listening(context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, "listening")
}
func (s *fakeSession) Notify(_ context.Context, msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, string(msg))
}

// messages is what the session was sent, a message a line.
func (s *fakeSession) messages() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.sent, "\n")
}

// newNotifier is a Notifier of a hub whose sessions' views never change
// and which subscribes to every resource.
func newNotifier(t *testing.T) *Notifier[*fakeSession] {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return New(Options[*fakeSession]{
		Logger: slog.New(slog.DiscardHandler),
		Spawn:  func(f func()) bool { go f(); return true },
		Stop:   stop,
		View: func(*fakeSession, *jsonrpc.Message) (Hashes, func(context.Context, string) error) {
			return Hashes{1, 2, 3}, func(context.Context, string) error { return nil }
		},
		Sessions:    func(Kind, func(*fakeSession, uint64)) {},
		Unsubscribe: func(*fakeSession, []string) {},
	})
}

// A listen asking for nothing is acknowledged and answered at once; one
// without notifications is refused; a session holds maxSessionListens at
// most. The face is told of each listen taken (Listening), before its
// acknowledgement, and of none refused.
func TestListenRefusalsAndBounds(t *testing.T) {
	n := newNotifier(t)
	sess := newFakeSession()
	listenReq := func(id int, notifications string) *jsonrpc.Message {
		m, err := jsonrpc.Decode([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{}%s}}`, id, notifications)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	res, err := n.Serve(t.Context(), sess, listenReq(1, `,"notifications":{}`))
	if err != nil || !strings.Contains(string(res), `"io.modelcontextprotocol/subscriptionId":1`) || strings.Count(sess.messages(), "acknowledged") != 1 ||
		!strings.HasPrefix(sess.messages(), "listening\n") {
		t.Errorf("empty listen: %s, %v; sent %s", res, err, sess.messages())
	}
	if _, err := n.Serve(t.Context(), sess, listenReq(2, ``)); jsonrpc.ToError(err).Code != jsonrpc.CodeInvalidParams {
		t.Errorf("listen without notifications: %v", err)
	}
	if got := strings.Count(sess.messages(), "listening"); got != 1 {
		t.Errorf("the face was told of %d listens taken, want 1: a refused one too", got)
	}
	if !sess.lists.Modern() {
		t.Error("a session that listened is not told on its listens alone")
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, maxSessionListens)
	for i := range maxSessionListens {
		go func() {
			_, err := n.Serve(ctx, sess, listenReq(10+i, `,"notifications":{"toolsListChanged":true}`))
			done <- err
		}()
	}
	await.For(t, 10*time.Second, fmt.Sprintf("%d listens open", maxSessionListens), func() bool { return sess.lists.Len() == maxSessionListens })
	if _, err := n.Serve(t.Context(), sess, listenReq(99, `,"notifications":{"toolsListChanged":true}`)); err == nil {
		t.Errorf("listen %d of a session was not refused", maxSessionListens+1)
	}
	cancel()
	for range maxSessionListens {
		<-done
	}
	if got := strings.Count(sess.messages(), "listening"); got != 1+maxSessionListens {
		t.Errorf("the face was told of %d listens taken, want %d", got, 1+maxSessionListens)
	}
	if n := sess.lists.Len(); n != 0 {
		t.Errorf("%d listens left after they were cancelled", n)
	}
}

// A listen's changes wait coalesced: however many list changes and
// updates of one URI come before it sends, it sends one of each; the hub
// never waits on it.
func TestListenCoalesces(t *testing.T) {
	l := &listen{meta: json.RawMessage(`{"io.modelcontextprotocol/subscriptionId":7}`), lists: [Kinds]bool{Tools: true},
		wake: make(chan struct{}, 1), uris: map[string]bool{"mem://a": true}, upd: map[string]json.RawMessage{}}
	for i := range 100 {
		l.listChanged(Tools, uint64(i+1))
		l.listChanged(Prompts, uint64(i+1)) // not asked for
		l.updated("mem://a", json.RawMessage(fmt.Sprintf(`{"uri":"mem://a","n":%d}`, i)))
		l.updated("mem://b", json.RawMessage(`{"uri":"mem://b"}`)) // not named
	}
	got := l.take()
	if len(got) != 2 {
		t.Fatalf("%d notifications, want 2: %q", len(got), got)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`; string(got[0]) != want {
		t.Errorf("list_changed %s, want %s", got[0], want)
	}
	if want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a","n":99,"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`; string(got[1]) != want {
		t.Errorf("updated %s, want %s", got[1], want)
	}
	l.listChanged(Tools, 100) // the hash it was told of already
	if got := l.take(); len(got) != 0 {
		t.Errorf("told again of a list it knows: %q", got)
	}
}
