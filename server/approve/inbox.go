package approve

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// The approval inbox: a `prompt` rule's call that no client can put to a
// person (no form elicitation, or a clients: rule with approvals: inbox)
// waits on the hub until someone approves or denies it in the inspector
// or on the command line, the client cancels it, or settings.prompt_timeout
// passes. An approval may leave a grant that lets later calls of the same
// tool through without asking. Both live on the Hub, not in the snapshot,
// so that a reload keeps them; both are bounded.
// clippedMark marks where a name or approver was cut, as the audit
// trail marks it.
const clippedMark = "…"

const (
	// maxPending bounds the calls waiting in all; maxPendingPerSession
	// those of one client session (its caller), maxPendingPerCredential
	// those of all the sessions of one HTTP credential, so that one
	// credential with many sessions cannot fill the inbox for the others.
	// A call over any is denied at once.
	maxPending              = 256
	maxPendingPerSession    = 16
	maxPendingPerCredential = 64
	// maxPendingBytes bounds the arguments the calls waiting hold in all,
	// and maxPendingBytesPerCredential those of one caller's (an HTTP
	// credential, or the local user's sessions): a count of calls bounds
	// nothing when each may hold 10 MiB (64 calls of 8 MiB held 1.3 GB).
	maxPendingBytes              = 64 << 20
	maxPendingBytesPerCredential = 32 << 20
	// maxGrants bounds the grants kept; a new one past it pushes out the
	// oldest (which then asks again: the safe side).
	maxGrants = 1024
	// maxApprovalArgs bounds the arguments a pending call shows.
	maxApprovalArgs = 4 << 10
	// maxGrantName bounds the name (a URI may be long) a pending call
	// shows and a grant keeps.
	maxGrantName = 1 << 10
)

// DB is the store every replica shares as the approvals use it.
type DB interface {
	shared.Tx
	shared.Locker
	shared.Notifier
}

// Options are what an Inbox is given by the hub that holds it.
type Options struct {
	// Store keeps the grants for every session and lists the calls
	// waiting on every replica (store: postgres://...); nil: here.
	Store  DB
	Logger *slog.Logger
	// Context ends when the hub closes: the watches of the store and the
	// desktop notifications end with it.
	Context context.Context
	// Stop is closed when the hub closes: nobody is left to approve a
	// call that waits.
	Stop <-chan struct{}
	// Spawn runs f on a goroutine the hub waits for at Close, false when
	// it is closing (f then does not run).
	Spawn func(f func()) bool
	// Safely runs f, logging and counting a panic instead of crashing.
	Safely func(what string, f func())
}

// Inbox is the hub's pending calls and grants.
type Inbox struct {
	now func() time.Time // the clock of grants' expiry; tests set it
	// shared keeps the grants for every session in the store every
	// replica shares (sharedgrants.go); nil: here.
	shared DB
	// replica names this hub among the replicas of a shared store, in
	// the rows of the calls waiting here (sharedpending.go).
	replica string

	logger    *slog.Logger
	ctx       context.Context
	stop      <-chan struct{}
	spawn     func(func()) bool
	safely    func(string, func())
	notifying chan struct{} // a token per desktop notification being shown

	mu            sync.Mutex // guards pending, perSession, perCredential and grants
	pending       map[string]*pendingCall
	perSession    map[string]int // by owner
	perCredential map[string]int // by credential, "" not counted
	// bytes and bytesPerCredential are the arguments' bytes the calls
	// waiting hold, in all and by credential ("" the local user's).
	bytes              int
	bytesPerCredential map[string]int
	grants             []*grant // oldest first
	// maxBytes and maxBytesPerCredential bound bytes and
	// bytesPerCredential: maxPendingBytes and
	// maxPendingBytesPerCredential, or what a test set (SetByteBounds).
	maxBytes, maxBytesPerCredential int
}

// New is an empty inbox with o.
func New(o Options) *Inbox {
	if o.Context == nil {
		o.Context = context.Background()
	}
	return &Inbox{now: time.Now, replica: NewID("r-"), shared: o.Store, logger: o.Logger, ctx: o.Context, stop: o.Stop,
		spawn: o.Spawn, safely: o.Safely, notifying: make(chan struct{}, maxNotifying),
		pending: map[string]*pendingCall{}, perSession: map[string]int{}, perCredential: map[string]int{},
		bytesPerCredential: map[string]int{}, maxBytes: maxPendingBytes, maxBytesPerCredential: maxPendingBytesPerCredential}
}

// SetByteBounds replaces the bounds of the arguments the calls waiting
// hold, in all and of one caller, for a test: the bound is shown as well
// by kilobytes a few times over it as by the 32 MiB a hub keeps, which
// under the race detector took a test tens of seconds to send.
func (a *Inbox) SetByteBounds(all, perCredential int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.maxBytes, a.maxBytesPerCredential = all, perCredential
}

// Replica names this hub among the replicas of a shared store, as the
// calls waiting here are listed.
func (a *Inbox) Replica() string { return a.replica }

// Shared reports whether the inbox is kept on a store every replica shares.
func (a *Inbox) Shared() bool { return a.shared != nil }

// pendingCall is a call waiting in the inbox.
type pendingCall struct {
	approval.Pending
	owner string // its caller (see caller): a session, or a credential without one
	cred  string // the HTTP credential it came with (session.Client), "" for none
	// sessionless: the call came without a session (see sessionless),
	// so a session grant could not end.
	sessionless bool
	name        string          // the tool or prompt name, or URI, whole (Tool may be cut)
	args        json.RawMessage // as the client sent them, to match a grant made meanwhile
	answer      chan verdict    // buffered: answered once, under approvals.mu
}

// verdict is a person's answer to a pending call.
type verdict struct {
	ok    bool
	by    string
	grant string // the grant the approval made, or that covered the call
}

// grant is a Grant with its argument globs compiled.
type grant struct {
	approval.Grant
	args  *policy.ArgsMatcher
	owner string // for a session's grant: its caller (see caller), "" for every session
}

// public is g as the inbox lists it, its args copied: the caller may
// keep it past a.mu.
func (g *grant) public() approval.Grant {
	c := g.Grant
	c.Args = maps.Clone(g.Args)
	return c
}

// covers reports whether g lets the call through at now, without using it.
func (g *grant) covers(now time.Time, owner, group, server, method, name string, args json.RawMessage) bool {
	if g.Group != group || g.Server != server || g.Method != method || g.Tool != name {
		return false
	}
	if g.owner != "" && g.owner != owner {
		return false
	}
	if !g.Expires.IsZero() && !now.Before(g.Expires) {
		return false
	}
	return g.args.Match(args)
}

// Now is the clock of grants' expiry.
func (a *Inbox) Now() time.Time { return a.now() }

// NewID is a short random id: 50 bits, unguessable.
func NewID(prefix string) string {
	b := make([]byte, 7)
	_, _ = rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))[:10]
}

// use finds a grant that covers the call and counts the call against it:
// its id and who approved it; ok false when none covers it.
func (a *Inbox) use(session, group, server, method, name string, args json.RawMessage) (id, by string, ok bool) {
	a.mu.Lock()
	id, by, ok = a.useLocked(session, group, server, method, name, args)
	a.mu.Unlock()
	if !ok && a.shared != nil {
		return a.sharedUse(session, group, server, method, name, args)
	}
	return id, by, ok
}

func (a *Inbox) useLocked(session, group, server, method, name string, args json.RawMessage) (id, by string, ok bool) {
	now := a.now()
	a.expireLocked(now)
	for i, g := range a.grants {
		if !g.covers(now, session, group, server, method, name, args) {
			continue
		}
		g.Used++
		if g.CallsLeft > 0 {
			if g.CallsLeft--; g.CallsLeft == 0 {
				a.grants = slices.Delete(a.grants, i, i+1)
			}
		}
		return g.ID, g.ApprovedBy, true
	}
	return "", "", false
}

// expireLocked drops the grants past their time.
func (a *Inbox) expireLocked(now time.Time) {
	a.grants = slices.DeleteFunc(a.grants, func(g *grant) bool { return !g.Expires.IsZero() && !now.Before(g.Expires) })
}

// add puts p in the inbox, or says why it cannot wait there.
func (a *Inbox) add(p *pendingCall) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case len(a.pending) >= maxPending:
		return fmt.Errorf("%d calls wait for approval already", maxPending)
	case a.perSession[p.owner] >= maxPendingPerSession:
		return fmt.Errorf("%d calls of this session wait for approval already", maxPendingPerSession)
	case p.cred != "" && a.perCredential[p.cred] >= maxPendingPerCredential:
		return fmt.Errorf("%d calls of this credential wait for approval already", maxPendingPerCredential)
	case a.bytesPerCredential[p.cred] > 0 && a.bytesPerCredential[p.cred]+len(p.args) > a.maxBytesPerCredential:
		return fmt.Errorf("the calls of this credential waiting for approval hold %s of arguments already, and this one %s (at most %s)",
			jsonrpc.ByteSize(int64(a.bytesPerCredential[p.cred])), jsonrpc.ByteSize(int64(len(p.args))), jsonrpc.ByteSize(int64(a.maxBytesPerCredential)))
	case a.bytes > 0 && a.bytes+len(p.args) > a.maxBytes:
		return fmt.Errorf("the calls waiting for approval hold %s of arguments already, and this one %s (at most %s)",
			jsonrpc.ByteSize(int64(a.bytes)), jsonrpc.ByteSize(int64(len(p.args))), jsonrpc.ByteSize(int64(a.maxBytes)))
	}
	a.pending[p.ID] = p
	a.perSession[p.owner]++
	if p.cred != "" {
		a.perCredential[p.cred]++
	}
	a.bytes += len(p.args)
	a.bytesPerCredential[p.cred] += len(p.args)
	return nil
}

// takeLocked removes the pending call id, reporting whether it was there.
func (a *Inbox) takeLocked(id string) (*pendingCall, bool) {
	p, ok := a.pending[id]
	if !ok {
		return nil, false
	}
	delete(a.pending, id)
	if a.perSession[p.owner]--; a.perSession[p.owner] <= 0 {
		delete(a.perSession, p.owner)
	}
	if p.cred != "" {
		if a.perCredential[p.cred]--; a.perCredential[p.cred] <= 0 {
			delete(a.perCredential, p.cred)
		}
	}
	a.bytes -= len(p.args)
	if a.bytesPerCredential[p.cred] -= len(p.args); a.bytesPerCredential[p.cred] <= 0 {
		delete(a.bytesPerCredential, p.cred)
	}
	return p, true
}

// withdraw takes p out of the inbox when its call stops waiting (timed
// out, cancelled): false when an answer came first, which is then in
// p.answer.
func (a *Inbox) withdraw(p *pendingCall) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.takeLocked(p.ID)
	return ok
}

// decide answers the pending call id with v, once.
func (a *Inbox) decide(id string, v verdict) (*pendingCall, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.takeLocked(id)
	if !ok {
		return nil, approval.ErrNoPending
	}
	p.answer <- v
	return p, nil
}

// list is the inbox, oldest call and grant first.
func (a *Inbox) list() approval.List {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked(a.now())
	l := approval.List{Pending: []approval.Pending{}, Grants: []approval.Grant{}}
	for _, p := range a.pending {
		l.Pending = append(l.Pending, p.Pending)
	}
	slices.SortFunc(l.Pending, func(x, y approval.Pending) int { return x.Time.Compare(y.Time) })
	for _, g := range a.grants {
		l.Grants = append(l.Grants, g.public())
	}
	return l
}

// EndSession forgets the grants for session alone, when it ends.
func (a *Inbox) EndSession(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grants = slices.DeleteFunc(a.grants, func(g *grant) bool { return g.owner == session })
}

// Approvals lists the calls waiting for approval and the grants in force.
// Arguments are shown with secrets redacted.
func (a *Inbox) Approvals() approval.List {
	l := a.list()
	if a.shared != nil {
		here := make(map[string]bool, len(l.Pending))
		for _, p := range l.Pending {
			here[p.ID] = true
		}
		l.Pending = append(l.Pending, a.sharedPendingList(here)...)
		slices.SortFunc(l.Pending, func(x, y approval.Pending) int { return x.Time.Compare(y.Time) })
		l.Grants = append(l.Grants, a.sharedList()...)
	}
	return l
}

// Approve lets the pending call id go ahead, recording by as who
// approved it. Unless o is once, it also makes a grant for the call's
// tool (and, with o.Args, its argument pattern) that lets later calls
// through without asking, and releases the other waiting calls it
// covers; the grant is returned (nil for once).
func (a *Inbox) Approve(id, by string, o approval.Options) (*approval.Grant, error) {
	return a.approve(id, by, o, "")
}

// approve is Approve, the grant it makes (if any) named grantID when set
// (an answer from another replica names the grant it announced).
func (a *Inbox) approve(id, by string, o approval.Options, grantID string) (_ *approval.Grant, err error) {
	var matcher *policy.ArgsMatcher
	if len(o.Args) > 0 {
		m, err := policy.NewArgsMatcher(o.Args)
		if err != nil {
			return nil, fmt.Errorf("grant args: %w", err)
		}
		matcher = m
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	by = ClipBy(by)
	if a.shared != nil && !a.has(id) {
		return a.approveElsewhere(id, by, o)
	}
	var share *grant // with a store, a grant for every session: kept there once a.mu is let go
	defer func() {
		if share == nil {
			return
		}
		if perr := a.sharedPut(share); perr != nil {
			a.logger.Error("approval: the grant could not be saved to the store", "grant", share.ID, "err", perr)
			err = fmt.Errorf("the call went ahead, but its grant could not be saved to the store for every replica: %w", perr)
		} else if perr := a.announceGrant(); perr != nil {
			a.logger.Warn("approval: the grant could not be announced to the other replicas; calls waiting there ask on", "grant", share.ID, "err", perr)
		}
	}()
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.pending[id]
	if !ok {
		return nil, approval.ErrNoPending
	}
	if o.Session && p.sessionless {
		return nil, approval.ErrNoSession
	}
	if o.Once() {
		a.takeLocked(id)
		p.answer <- verdict{ok: true, by: by}
		a.logger.Info("approval: call approved", "id", id, "by", by, "tool", p.Tool)
		return nil, nil
	}
	if len(p.name) > maxGrantName {
		return nil, fmt.Errorf("a grant is for a name of at most %d bytes: approve this call alone", maxGrantName)
	}
	now := a.now()
	if grantID == "" {
		grantID = NewID("g-")
	}
	g := &grant{Grant: approval.Grant{ID: grantID, Created: now, ApprovedBy: by, Method: p.Method, Tool: p.name,
		Group: p.Group, Server: p.Server, Args: maps.Clone(o.Args), CallsLeft: o.Calls}, args: matcher}
	if o.Session {
		g.Session, g.owner = p.Session, p.owner
	}
	if o.For > 0 {
		g.Expires = now.Add(time.Duration(o.For))
	}
	if !g.args.Match(p.args) {
		return nil, errors.New("the grant's args do not match the call being approved")
	}
	a.expireLocked(now)
	if len(a.grants) >= maxGrants {
		a.grants = slices.Delete(a.grants, 0, len(a.grants)-maxGrants+1)
	}
	a.grants = append(a.grants, g)
	out := g.public()
	a.takeLocked(id)
	g.Used++ // the approved call is the grant's first
	p.answer <- verdict{ok: true, by: by, grant: g.ID}
	a.logger.Info("approval: call approved with a grant", "id", id, "by", by, "grant", g.ID, "tool", p.Tool)
	// The calls of a loop that came while this one waited go too.
	for oid, q := range a.pending {
		if gid, gby, ok := a.useLocked(q.owner, q.Group, q.Server, q.Method, q.name, q.args); ok {
			a.takeLocked(oid)
			q.answer <- verdict{ok: true, by: gby, grant: gid}
		}
	}
	if a.shared != nil && g.owner == "" && slices.Contains(a.grants, g) {
		a.grants = slices.DeleteFunc(a.grants, func(x *grant) bool { return x == g })
		share = g
	}
	return &out, nil
}

// Deny refuses the pending call id: it is answered -32001, "denied by
// <by>".
func (a *Inbox) Deny(id, by string) error {
	by = ClipBy(by)
	p, err := a.decide(id, verdict{by: by})
	if errors.Is(err, approval.ErrNoPending) && a.shared != nil {
		return a.answerElsewhere(id, sharedAnswer{By: by})
	}
	if err == nil {
		a.logger.Info("approval: call denied", "id", id, "by", by, "tool", p.Tool)
	}
	return err
}

// Revoke ends the grant id: the calls it covered ask again.
func (a *Inbox) Revoke(id, by string) error {
	a.mu.Lock()
	n := len(a.grants)
	a.grants = slices.DeleteFunc(a.grants, func(g *grant) bool { return g.ID == id })
	found := len(a.grants) < n
	a.mu.Unlock()
	switch {
	case !found && a.shared == nil:
		return approval.ErrNoGrant
	case !found:
		if err := a.sharedRevoke(id); err != nil {
			return err
		}
	}
	a.logger.Info("approval: grant revoked", "grant", id, "by", by)
	return nil
}

// ClipBy bounds who approved, as it is kept in grants and audit records.
func ClipBy(by string) string {
	if by == "" {
		return "unknown"
	}
	return clip.Marked(by, 64, clippedMark)
}

// clipName is a name or URI as a pending call shows it.
func clipName(name string) string {
	return clip.Marked(name, maxGrantName, clippedMark)
}

// approvalArgs are args as a pending call shows them: the config's
// ${secret:} values and secret-named members redacted, as the inspector
// redacts them (redact.JSON), and cut at maxApprovalArgs (clipped then true).
func approvalArgs(cfg *config.Config, args json.RawMessage) (shown json.RawMessage, clipped bool) {
	if len(args) == 0 {
		return nil, false
	}
	text := redact.JSON(cfg.RedactSecrets(args))
	if len(text) > maxApprovalArgs || !json.Valid([]byte(text)) {
		if len(text) > maxApprovalArgs {
			text, clipped = clip.Marked(text, maxApprovalArgs, clippedMark), true
		}
		q, _ := json.Marshal(text) // shown as text: cut JSON is not JSON
		return q, clipped
	}
	return json.RawMessage(text), false
}

// Covering is the id of a grant that would let a call of owner through
// now, "" for none: found as use finds one, but not used.
func (a *Inbox) Covering(owner, group, server, method, name string, args json.RawMessage) string {
	a.mu.Lock()
	now := a.now()
	for _, g := range a.grants {
		if g.covers(now, owner, group, server, method, name, args) {
			a.mu.Unlock()
			return g.ID
		}
	}
	a.mu.Unlock()
	if a.shared == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	grants, err := a.sharedGrants(ctx)
	if err != nil {
		return ""
	}
	for _, g := range grants {
		if g.covers(now, owner, group, server, method, name, args) {
			return g.ID
		}
	}
	return ""
}

// Keep adds g, its argument globs compiled in args, to the grants (for
// every session when owner is "", else for the caller owner's), the
// oldest going past maxGrants, as approve keeps the grants a person
// makes. A session's grant stays on this hub.
func (a *Inbox) Keep(pub approval.Grant, args *policy.ArgsMatcher, owner string) {
	g := &grant{Grant: pub, args: args, owner: owner}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked(a.now())
	if len(a.grants) >= maxGrants {
		a.grants = slices.Delete(a.grants, 0, len(a.grants)-maxGrants+1)
	}
	a.grants = append(a.grants, g)
}

// SetClock sets the clock of grants' expiry (time.Now), for tests of the
// hub that move it on.
func (a *Inbox) SetClock(now func() time.Time) { a.now = now }
