package rounds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/era"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Multi round-trip requests (2026-07-28, "Multi Round-Trip Requests",
// SEP-2322) both ways. A server of that version does not send the client
// requests (elicitation, sampling, roots): it answers tools/call,
// prompts/get or resources/read with an input_required result listing
// them, and the client sends the request again with its answers
// (inputResponses) and the state the server gave (requestState). The hub
// stands between clients and servers of either kind:
//
//   - a 2026-07-28 client calling through an older server: the server's
//     request during the call becomes the call's input_required answer,
//     and the hub holds the call, and the server's request, until the
//     client's retry brings the answer (Held);
//   - a 2026-07-28 client calling through a 2026-07-28 server: the
//     server's input_required passes through, its requestState sealed
//     inside the hub's, so that the retry is known for what it is and
//     goes back to that server with the server's state untouched;
//   - an older client calling through a 2026-07-28 server: each input
//     request reaches the client as the request it stands for, and the
//     hub sends the call again with the answers until it completes
//     (Fulfil).

// InputMethod reports whether a request of method may be answered
// input_required (the specification's "Supported Requests").
func InputMethod(method string) bool {
	switch method {
	case policy.MethodToolsCall, policy.MethodPromptsGet, policy.MethodResourcesRead:
		return true
	}
	return false
}

// relayStateTTL is how long the hub's seal on a 2026-07-28 server's own
// requestState is valid: the hub holds nothing for such a call (the
// server keeps what it needs in its state), so the user may take longer
// than a call timeout to answer; the server still checks its own state.
const relayStateTTL = 10 * time.Minute

// Call sends the call c of a 2026-07-28 client's request to s: held by
// the hub when the server is older and asks the client something,
// relayed with its requestState sealed when the server is of 2026-07-28
// too. A retry carrying a requestState is checked before anything is
// sent: one the hub did not seal, altered, expired, of another session or
// another request is refused -32602, and so is one whose round was
// answered already. Nothing answers a retry from a cache: it always
// reaches the call it resumes.
func (r *Rounds) Call(ctx context.Context, c *call.Call, s call.Upstream, params json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	who, digest := c.Session.Caller(), callDigest(c)
	caps := c.Session.Capabilities()
	token, retry := jsonrpc.StringValue(c.Request.Field("requestState"))
	if !retry {
		if c.Request.Field("requestState") != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: requestState must be a string")
		}
		if mcp.IsModernProtocol(s.ProtocolVersion()) {
			return r.relay(ctx, c, s, params, timeout, who, digest)
		}
		p, err := r.startHeld(ctx, c, s, params, timeout, caps)
		if err != nil {
			return nil, err
		}
		return r.awaitHeld(ctx, p, who, digest)
	}
	st, err := r.states.open(token, who, digest)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
	}
	if st.Round == "" {
		// The server's own state: it goes back to that server in place
		// of the hub's, with the client's answers as they came (params
		// that call_dynamic_tool made have neither yet).
		q, _ := jsonrpc.Marshal(st.Upstream)
		if params, err = jsonrpc.SetField(params, "requestState", q); err == nil && c.Request.Field("inputResponses") != nil {
			params, err = jsonrpc.SetField(params, "inputResponses", c.Request.Field("inputResponses"))
		}
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
		}
		return r.relay(ctx, c, s, params, timeout, who, digest)
	}
	answers, err := inputResponses(c.Request.Field("inputResponses"))
	if err != nil {
		return nil, err
	}
	p := r.inputs.take(st.Round)
	if p == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+ErrStateUsed.Error())
	}
	if tok := progressToken(c); tok != "" && p.carry != nil {
		defer p.carry(tok)() // before the answers: what the server sends for them comes in this round
	}
	p.answer(answers, caps)
	return r.awaitHeld(ctx, p, who, digest)
}

// relay sends a call to a 2026-07-28 server and seals the requestState of
// an input_required answer inside the hub's.
func (r *Rounds) relay(ctx context.Context, c *call.Call, s call.Upstream, params json.RawMessage, timeout time.Duration, who, digest string) (json.RawMessage, error) {
	res, _, err := r.hub.Send.Hop(ctx, &call.Hop{Call: c, Owner: c.Owner, Server: s, Method: c.Method, Params: params, Timeout: timeout})
	if err != nil || !era.IsInputRequired(res) {
		return res, err
	}
	o, _ := jsonrpc.ScanObject(res) // checked by era.IsInputRequired
	state, ok := jsonrpc.StringValue(o.Field("requestState"))
	if !ok {
		return res, nil // nothing to seal: the retry carries no state either
	}
	sealed, err := r.states.seal(sealedState{Server: s.ServerConfig().ID(), Upstream: state, Caller: who, Call: digest,
		Expires: r.states.now().Add(relayStateTTL).UnixMilli()})
	if err != nil {
		return nil, err
	}
	q, _ := jsonrpc.Marshal(sealed)
	return o.With(jsonrpc.Member{Key: "requestState", Value: q})
}

// inputResponses checks a retry's inputResponses: absent, or an object
// whose every member is a result (an object). Each is read by the key
// of the input request it answers.
func inputResponses(raw []byte) (jsonrpc.Object, error) {
	if raw == nil || string(raw) == "null" {
		return jsonrpc.Object{}, nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return jsonrpc.Object{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: inputResponses must be an object")
	}
	for k, v := range members {
		if len(v) == 0 || v[0] != '{' {
			return jsonrpc.Object{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, fmt.Sprintf("invalid params: inputResponses[%q] must be an object", clip.Echo(k)))
		}
	}
	o, err := jsonrpc.ScanObject(raw)
	if err != nil {
		return jsonrpc.Object{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: inputResponses must be an object")
	}
	return o, nil
}

// answerable reports whether a client with caps can answer a request of
// method with params: the specification forbids sending one it did not
// declare (an elicitation in URL mode needs that mode declared).
func answerable(caps mcp.ClientCapabilities, method string, params json.RawMessage) bool {
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		return caps.Sampling != nil
	case string(mcp.MethodElicitationCreate):
		return routes.CanElicit(caps.Elicitation, routes.ElicitationMode(params))
	case string(mcp.MethodListRoots):
		return caps.Roots != nil
	}
	return false
}

// inputCalls are the calls the hub holds for 2026-07-28 clients between
// rounds, by the id of the round their requestState names, and those
// whose upstream call runs, by its owner.
type inputCalls struct {
	mu      sync.Mutex                 // guards held, running and every Held's round
	held    map[string]*Held           // parked until the client's retry
	running map[upstream.Owner][]*Held // upstream calls in flight, by owner, oldest first
}

// maxHeldCalls bounds the calls held waiting for a client's retry, all
// clients together: each holds an upstream call, and its requests, until
// the call timeout at most. A call that would be held past it fails.
const maxHeldCalls = 1024

func newInputCalls() *inputCalls {
	return &inputCalls{held: map[string]*Held{}, running: map[upstream.Owner][]*Held{}}
}

// put parks p under round; false when too many are held.
func (ic *inputCalls) put(round string, p *Held) bool {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if len(ic.held) >= maxHeldCalls {
		return false
	}
	ic.held[round], p.round = p, round
	return true
}

// take unparks the call of round: a round is taken once.
func (ic *inputCalls) take(round string) *Held {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	p := ic.held[round]
	if p != nil {
		delete(ic.held, round)
		p.round = ""
	}
	return p
}

// drop forgets p, if it is parked.
func (ic *inputCalls) drop(p *Held) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if p.round != "" && ic.held[p.round] == p {
		delete(ic.held, p.round)
	}
	p.round = ""
}

// run notes that p's upstream call runs for owner until the func it
// returns is called.
func (ic *inputCalls) run(owner upstream.Owner, p *Held) func() {
	ic.mu.Lock()
	ic.running[owner] = append(ic.running[owner], p)
	ic.mu.Unlock()
	return func() {
		ic.mu.Lock()
		defer ic.mu.Unlock()
		if rest := slices.DeleteFunc(ic.running[owner], func(x *Held) bool { return x == p }); len(rest) > 0 {
			ic.running[owner] = rest
		} else {
			delete(ic.running, owner)
		}
	}
}

// Held is the held call a request s sends during a call (an
// upstream.Event's Owner, Server and Part) is part of, nil for none: the
// request is then put to the client in the held call's next round
// (Held.Ask), not sent to it. Of the owner's held calls whose upstream
// call to s runs, it is the one part names (the held call's number, which
// its hop carried as its Part: a number, not the call, as upstream keeps
// it); else the latest, as upstream ties a request it cannot tell apart
// to the owner's latest call (see upstream's callContext).
func (r *Rounds) Held(owner upstream.Owner, s call.Upstream, part uint64) *Held {
	if owner == nil {
		return nil
	}
	ic := r.inputs
	ic.mu.Lock()
	defer ic.mu.Unlock()
	calls := ic.running[owner]
	var latest *Held
	for _, p := range calls {
		if p.server != s {
			continue
		}
		if p.id == part {
			return p
		}
		latest = p
	}
	return latest
}

// Held is a 2026-07-28 client's call the hub sends to an older server
// and holds across the client's rounds: the server's requests to the
// client during it wait as asks, each answered by a retry.
//
// While the client answers, the server waits on its request, as it would
// on a client it asked directly; the call is bounded by its call timeout
// from its first request, and so is everything it asks. A retry that
// never comes leaves the asks unanswered until then: the server's
// requests fail ("the client did not answer ... within"), the call is
// cancelled, and its state is refused from then on.
type Held struct {
	id       uint64 // its number among the held calls: its hop's Part (see Rounds.Held)
	server   call.Upstream
	deadline time.Time          // the call's: its states expire with it
	cancel   context.CancelFunc // ends the upstream call
	done     chan struct{}      // closed when the upstream answered; res and err set
	res      json.RawMessage
	err      error
	wake     chan struct{} // a new ask (capacity 1)
	consumed chan struct{} // closed once a request took the outcome or gave up on the call
	consume  func()
	round    string // the round it is parked under; guarded by inputCalls.mu
	user     string // its caller's key, when it owns its connections (see server's peruser.go)
	linker   Linker // its caller's face, likewise
	// carry passes the call's progress to a later round (Hub.HoldProgress);
	// nil when it asked for none.
	carry func(to string) (end func())

	mu   sync.Mutex // guards the fields below
	caps mcp.ClientCapabilities
	asks []*inputAsk // unanswered, oldest first
	next int         // keys handed out
}

// Linker is how a face sends its caller to sign in to a per-user server
// (call.Linker).
type Linker = call.Linker

// UserKey is the key of the caller of a call that owns its connections
// (a request without a session, see startHeld): an upstream.Owner, so
// that its calls to a per-user server are its caller's.
func (p *Held) UserKey() string { return p.user }

// Client is "": a call that owns its connections is no client's share of
// them (upstream.Owner).
func (p *Held) Client() string { return "" }

// SessionID is "": a held call is no session (upstream.Owner).
func (p *Held) SessionID() string { return "" }

// ClientCapabilities are unknown to the connections the call owns, which
// declare the hub's (upstream.Owner); its client's are asked per round.
func (p *Held) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// Linker is the face of the caller of a call that owns its connections,
// which sends it to sign in; nil for none (a call.Owner).
func (p *Held) Linker() Linker { return p.linker }

// inputAsk is one request of the server's waiting for the client.
type inputAsk struct {
	key    string
	method string
	params json.RawMessage
	reply  chan json.RawMessage // capacity 1
}

// startHeld sends c upstream to s on a goroutine of the hub's, detached
// from the client's request (which ends with the first input_required),
// within timeout. The goroutine keeps the outcome until a request takes
// it, the timeout passes or the hub closes.
//
// The call is its session's (c.Owner; see upstream's Request). A request
// without a session has a session that ends with its answer, and with it
// the connections of that session's own (isolation: per-session): the
// call is then the owner of its connections itself (ownsConn), which it
// releases when it ends.
func (r *Rounds) startHeld(ctx context.Context, c *call.Call, s call.Upstream, params json.RawMessage, timeout time.Duration, caps mcp.ClientCapabilities) (*Held, error) {
	h := r.hub
	p := &Held{server: s, deadline: time.Now().Add(timeout), done: make(chan struct{}), wake: make(chan struct{}, 1),
		consumed: make(chan struct{}), caps: caps}
	p.consume = sync.OnceFunc(func() { close(p.consumed) })
	pctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), p.deadline)
	p.cancel = cancel
	p.id = r.heldSeq.Add(1)
	owner := c.Owner
	ownsConn := c.Session.Sessionless()
	if ownsConn {
		p.user, p.linker = c.Owner.UserKey(), c.Owner.Linker() // auth: per-user servers: the call is its caller's (its session's)
		owner = p
	}
	releaseProgress := func() {}
	if tok := progressToken(c); tok != "" && h.HoldProgress != nil {
		// The call goes upstream with this round's token, and its
		// progress comes with it in every round (each a request of its
		// own, with a token of its own).
		p.carry, releaseProgress = h.HoldProgress(tok)
	}
	stopOnClose := context.AfterFunc(h.Context, cancel)
	if !h.Spawn(func() {
		defer releaseProgress()
		defer stopOnClose()
		defer cancel()
		if ownsConn {
			defer h.Release(p)
		}
		defer r.inputs.drop(p)
		ended := r.inputs.run(owner, p)
		// A Send that panics (Spawn recovers and counts it) still ends
		// the call, with this error for its client: else the owner's
		// later server requests went to a call that would never end.
		p.err = jsonrpc.Errorf(jsonrpc.CodeInternalError, "the hub failed while making this call")
		func() {
			defer func() { ended(); close(p.done) }()
			p.res, _, p.err = h.Send.Hop(pctx, &call.Hop{Owner: owner, Server: s, Part: p.id, Method: c.Method, Params: params, Timeout: timeout})
		}()
		select {
		case <-p.consumed:
		case <-pctx.Done():
		}
	}) {
		releaseProgress()
		stopOnClose()
		cancel()
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the hub is shutting down")
	}
	return p, nil
}

// awaitHeld waits for p's outcome or its next asks, whichever first, and
// answers the client's request with it: the result, or input_required
// with the asks and a state naming p's next round. A client that cancels
// its request ends the call.
func (r *Rounds) awaitHeld(ctx context.Context, p *Held, who, digest string) (json.RawMessage, error) {
	for {
		select {
		case <-p.done:
			p.consume()
			return p.res, p.err
		default:
		}
		p.mu.Lock()
		asks := slices.Clone(p.asks)
		p.mu.Unlock()
		if len(asks) > 0 {
			return r.park(p, asks, who, digest)
		}
		select {
		case <-p.done:
		case <-p.wake:
		case <-ctx.Done():
			p.consume()
			p.cancel()
			return nil, ctx.Err()
		}
	}
}

// park answers with p's asks and a sealed state for its next round, and
// holds p until the retry.
func (r *Rounds) park(p *Held, asks []*inputAsk, who, digest string) (json.RawMessage, error) {
	round, err := randomID()
	if err != nil {
		return nil, err
	}
	state, err := r.states.seal(sealedState{Round: round, Caller: who, Call: digest, Expires: p.deadline.UnixMilli()})
	if err != nil {
		return nil, err
	}
	type inputRequest struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params,omitempty"`
	}
	requests := make(map[string]inputRequest, len(asks))
	for _, a := range asks {
		params := a.params
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{}`) // roots/list has none: an empty object, as the specification writes it
		}
		requests[a.key] = inputRequest{Method: a.method, Params: params}
	}
	res, err := jsonrpc.Marshal(struct {
		ResultType    mcp.ResultType          `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{mcp.ResultTypeInputRequired, requests, state})
	if err != nil {
		return nil, err
	}
	if !r.inputs.put(round, p) {
		p.consume()
		p.cancel()
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, fmt.Sprintf("too many calls wait for their clients' input (at most %d)", maxHeldCalls))
	}
	return res, nil
}

// Ask is a request of the server's during p: it waits for the client's
// answer, brought by a retry, within ctx (the server's own deadline for
// it). A client that did not declare it can answer method is not asked.
func (p *Held) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	if !answerable(p.caps, method, params) {
		p.mu.Unlock()
		return nil, &upstream.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "dynamic-mcp: the client does not support " + method}
	}
	p.next++
	a := &inputAsk{key: fmt.Sprintf("input-%d", p.next), method: method, params: bytes.Clone(params), reply: make(chan json.RawMessage, 1)}
	p.asks = append(p.asks, a)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-a.reply:
		return r, nil
	case <-ctx.Done():
		p.mu.Lock()
		p.asks = slices.DeleteFunc(p.asks, func(x *inputAsk) bool { return x == a })
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

// answer hands the server the client's answers, each to the ask of its
// key; an ask without one is asked again in the next round, as the
// specification has a server do. caps are what the client states now.
func (p *Held) answer(answers jsonrpc.Object, caps mcp.ClientCapabilities) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.caps = caps
	p.asks = slices.DeleteFunc(p.asks, func(a *inputAsk) bool {
		v := answers.Field(a.key)
		if v == nil {
			return false
		}
		a.reply <- bytes.Clone(v)
		return true
	})
}

// progressToken is the hub's progress token a call goes upstream with
// (routes.Progress put it in its _meta), "" for none.
func progressToken(c *call.Call) string {
	if c.Meta == nil {
		return ""
	}
	meta, err := jsonrpc.ScanObject(c.Meta)
	if err != nil {
		return ""
	}
	tok, _ := jsonrpc.StringValue(meta.Field("progressToken"))
	return tok
}

// randomID is a round's id: 128 random bits.
func randomID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// maxInputRounds bounds the rounds of one call to a 2026-07-28 server on
// an older client's behalf, and maxShedRounds those in a row that asked
// nothing (the server shedding load): as mcp-go's client does.
const (
	maxInputRounds = 10
	maxShedRounds  = 3
)

// Fulfil completes a call of an older client that a 2026-07-28 server
// answered input_required (res): each input request goes to the client as
// the request it stands for (refused, as any server's request, where the
// client did not declare it can answer), and the call is sent again with
// the answers and the server's requestState untouched, until a result
// that is not input_required.
func (r *Rounds) Fulfil(ctx context.Context, c *call.Call, s call.Upstream, params json.RawMessage, res json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	shed := 0
	for round := 1; ; round++ {
		if round > maxInputRounds {
			return nil, fmt.Errorf("upstream %s asked for input more than %d times in one call", s.ServerConfig().ID(), maxInputRounds)
		}
		var ir struct {
			InputRequests map[string]struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"inputRequests"`
		}
		if err := json.Unmarshal(res, &ir); err != nil {
			return nil, fmt.Errorf("upstream %s: an input_required result: %w", s.ServerConfig().ID(), err)
		}
		if len(ir.InputRequests) == 0 {
			if shed++; shed > maxShedRounds {
				return nil, fmt.Errorf("upstream %s asked %d times in a row to retry without asking anything", s.ServerConfig().ID(), maxShedRounds+1)
			}
		} else {
			shed = 0
		}
		keys := make([]string, 0, len(ir.InputRequests))
		for k := range ir.InputRequests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		answers := make(map[string]json.RawMessage, len(keys))
		for _, k := range keys {
			in := ir.InputRequests[k]
			var p json.RawMessage
			if len(in.Params) > 0 && string(in.Params) != "null" {
				p = in.Params
			}
			actx, cancel := context.WithTimeout(ctx, timeout)
			a, err := r.hub.AskClient(actx, routes.ServerRequest{Server: s, Method: in.Method, Params: p, Owner: c.Owner})
			cancel()
			if err != nil {
				var re *upstream.RPCError
				if errors.As(err, &re) {
					// A refusal or the client's error: the call cannot go on
					// (an input response is a result, never an error).
					err = errors.New(re.Message)
				}
				return nil, fmt.Errorf("upstream %s asked the client %s (%s): %w", s.ServerConfig().ID(), in.Method, k, err)
			}
			answers[k] = a
		}
		retry, err := retryParams(params, res, answers)
		if err != nil {
			return nil, err
		}
		if res, _, err = r.hub.Send.Hop(ctx, &call.Hop{Call: c, Owner: c.Owner, Server: s, Method: c.Method, Params: retry, Timeout: timeout}); err != nil || !era.IsInputRequired(res) {
			return res, err
		}
	}
}

// retryParams are params again with the answers as inputResponses and the
// requestState of the input_required result res, byte for byte, if it has
// one.
func retryParams(params, res json.RawMessage, answers map[string]json.RawMessage) (json.RawMessage, error) {
	b, err := jsonrpc.Marshal(answers)
	if err != nil {
		return nil, err
	}
	out, err := jsonrpc.SetField(params, "inputResponses", b)
	if err != nil {
		return nil, err
	}
	if state := jsonrpc.Field(res, "requestState"); state != nil {
		return jsonrpc.SetField(out, "requestState", state)
	}
	return jsonrpc.DeleteField(out, "requestState")
}
