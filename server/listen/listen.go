package listen

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file serves subscriptions/listen (2026-07-28, SEP-2575): the one
// way a client of that protocol hears of changes. The client names the
// notifications it wants; the hub acknowledges with
// notifications/subscriptions/acknowledged (the first message carrying
// the listen's id in _meta io.modelcontextprotocol/subscriptionId), sends
// each notification it agreed to with that id, and keeps the request open
// until the client cancels it, the session ends, or the hub shuts down,
// when it answers with an empty result carrying the id. A listen is fed
// from the places that feed legacy sessions: Notifier.tell (the session's
// view of a list changed, after a reload or an upstream's list_changed)
// and the hub's upstream notifications (resources/updated of a URI the
// listen names, State.Updated).

// Method is the request that opens a listen.
const Method = "subscriptions/listen"

// A session holds at most maxSessionListens listens at once, each naming
// at most maxListenURIs resources: what the hub keeps for them is bounded.
const (
	maxSessionListens = 8
	maxListenURIs     = 256
)

// filter is what a listen asks for, and what the hub agreed to.
type filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

func (f filter) lists() [Kinds]bool {
	return [Kinds]bool{f.ToolsListChanged, f.PromptsListChanged, f.ResourcesListChanged}
}

func (f filter) empty() bool {
	return !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0
}

// listen is one open subscriptions/listen of a session. What the hub has
// to tell it waits here, coalesced, until the listen's own goroutine (the
// request's handler) sends it: the hub never waits on a listen, and what
// waits is bounded by what the listen asked for (one flag a list, one
// entry a URI).
type listen struct {
	meta  json.RawMessage // {"io.modelcontextprotocol/subscriptionId": id}
	lists [Kinds]bool     // the list_changed it gets
	wake  chan struct{}   // signalled when something waits
	mu    sync.Mutex      // guards the fields below
	uris  map[string]bool // the resources it gets updates of
	told  Hashes          // hash of each list as the listen last heard of it
	due   [Kinds]bool     // a list_changed waits to be sent
	upd   map[string]json.RawMessage
	order []string // the URIs in upd, oldest first
}

func (l *listen) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// listChanged marks list k changed for l when its hash is not the one l
// was last told of.
func (l *listen) listChanged(k Kind, hash uint64) {
	if !l.lists[k] {
		return
	}
	l.mu.Lock()
	changed := l.told[k] != hash
	if changed {
		l.told[k], l.due[k] = hash, true
	}
	l.mu.Unlock()
	if changed {
		l.signal()
	}
}

// updated queues resources/updated of uri for l, when l names it; a URI
// already waiting keeps its place and takes the newer params.
func (l *listen) updated(uri string, params json.RawMessage) {
	l.mu.Lock()
	if !l.uris[uri] {
		l.mu.Unlock()
		return
	}
	if _, waiting := l.upd[uri]; !waiting {
		l.order = append(l.order, uri)
	}
	l.upd[uri] = params
	l.mu.Unlock()
	l.signal()
}

// take returns what waits, as notifications ready to send.
func (l *listen) take() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for k := range Kinds {
		if l.due[k] {
			l.due[k] = false
			out = append(out, jsonrpc.EncodeNotification(ChangedMethods[k], l.params(nil)))
		}
	}
	for _, uri := range l.order {
		out = append(out, jsonrpc.EncodeNotification("notifications/resources/updated", l.params(l.upd[uri])))
	}
	clear(l.upd)
	l.order = l.order[:0]
	return out
}

// params are p (nil: none) with the listen's id in their _meta; every
// other byte of p is kept.
func (l *listen) params(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || p[0] != '{' {
		p = json.RawMessage(`{}`)
	}
	meta := jsonrpc.Field(p, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		meta = []byte(`{}`)
	}
	id := jsonrpc.Field(l.meta, mcp.MetaKeySubscriptionID)
	meta, err := jsonrpc.SetField(meta, mcp.MetaKeySubscriptionID, id)
	if err != nil {
		return json.RawMessage(`{"_meta":` + string(l.meta) + `}`)
	}
	out, err := jsonrpc.SetField(p, "_meta", meta)
	if err != nil {
		return json.RawMessage(`{"_meta":` + string(l.meta) + `}`)
	}
	return out
}

// Serve serves one subscriptions/listen of sess until the client cancels
// it (ctx), the session ends or the hub shuts down. It holds no snapshot
// meanwhile: a reload is seen as the changes it makes.
func (n *Notifier[S]) Serve(ctx context.Context, sess S, msg *jsonrpc.Message) (json.RawMessage, error) {
	st := sess.Lists()
	st.SetModern()
	var p struct {
		Notifications *filter `json:"notifications"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.Notifications == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: subscriptions/listen needs notifications, an object")
	}
	want := *p.Notifications
	if len(want.ResourceSubscriptions) > maxListenURIs {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: a listen may name %d resources", maxListenURIs))
	}
	meta, err := jsonrpc.SetField([]byte(`{}`), mcp.MetaKeySubscriptionID, msg.ID)
	if err != nil {
		return nil, err
	}
	l := &listen{meta: meta, lists: want.lists(), wake: make(chan struct{}, 1), uris: map[string]bool{}, upd: map[string]json.RawMessage{}}
	l.told, _ = n.opts.View(sess, msg) // told of a change from now on
	if !st.add(l) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("a session may hold %d listens: cancel one first", maxSessionListens))
	}
	defer func() {
		st.remove(l)
		n.unsubscribe(sess, l)
	}()
	// Taken: refused no more. Its acknowledgement may wait for upstreams
	// (subscribe, below); the face need not (over HTTP its stream opens).
	sess.Listening(ctx)
	// A change told to the sessions between the snapshot and the
	// listen's registration is not lost: it is the view now.
	now, subscribe := n.opts.View(sess, msg)
	for k := range Kinds {
		l.listChanged(k, now[k])
	}

	// The hub declares every list's listChanged and resource
	// subscriptions, so it agrees to every list asked for, and to each
	// resource it could subscribe the session to.
	agreed := want
	agreed.ResourceSubscriptions = nil
	for _, uri := range want.ResourceSubscriptions {
		if l.names(uri) {
			continue
		}
		if err := subscribe(ctx, uri); err != nil {
			n.opts.Logger.Debug("listen: resource not subscribed", "session", sess.ID(), "uri", clip.Echo(uri), "err", err)
			continue
		}
		l.mu.Lock()
		l.uris[uri] = true
		l.mu.Unlock()
		agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
	}

	ack, err := jsonrpc.Marshal(struct {
		Meta          json.RawMessage `json:"_meta"`
		Notifications filter          `json:"notifications"`
	}{meta, agreed})
	if err != nil {
		return nil, err
	}
	sess.Notify(ctx, jsonrpc.EncodeNotification(mcp.MethodNotificationSubscriptionsAcknowledged, ack))
	ended := func() (json.RawMessage, error) {
		return json.RawMessage(`{"resultType":"complete","_meta":` + string(meta) + `}`), nil
	}
	if agreed.empty() {
		return ended() // nothing to listen for: the stream ends at once
	}
	for {
		select {
		case <-l.wake:
			for _, m := range l.take() {
				sess.Notify(ctx, m)
			}
		case <-ctx.Done():
			// Cancelled by the client (which gets no answer then) or by
			// its session's end: the listen ends as the spec has a server
			// end one, with its result.
			return ended()
		case <-sess.Gone():
			return ended()
		case <-st.unheard:
			return ended()
		case <-n.opts.Stop:
			return ended()
		}
	}
}

// unsubscribe ends the session's subscriptions to the resources l named
// that no other listen of the session names (see Options.Unsubscribe).
func (n *Notifier[S]) unsubscribe(sess S, l *listen) {
	l.mu.Lock()
	uris := make([]string, 0, len(l.uris))
	for uri := range l.uris {
		uris = append(uris, uri)
	}
	l.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	others := sess.Lists().list() // l is removed already
	uris = slices.DeleteFunc(uris, func(uri string) bool {
		return slices.ContainsFunc(others, func(o *listen) bool { return o.names(uri) })
	})
	n.opts.Unsubscribe(sess, uris)
}

// names reports whether l gets updates of uri.
func (l *listen) names(uri string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uris[uri]
}
