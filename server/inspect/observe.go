package inspect

import (
	"context"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// The inspector is told about the hub's traffic.
var _ traffic.Observer = (*Inspector)(nil)

type rowKey struct{}

// rowOf is the row of the request ctx is answering, or nil. Hops and the
// messages that come during a request run in a context derived from the
// one CallStarted returned.
func rowOf(ctx context.Context) *row {
	r, _ := ctx.Value(rowKey{}).(*row)
	return r
}

// CallStarted records a client's request as a pending row.
func (i *Inspector) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	r := &row{Kind: kindRequest, User: clip(c.User, maxName), Transport: c.Transport, Protocol: c.Protocol, ID: clip(string(c.ID), maxName),
		Method: clip(c.Method, maxName), Start: c.Start, Params: keep(c.Params, i.opts.MaxMessage), Status: statusPending}
	r.bytes = r.Params.size() + len(r.ID) + len(r.Method) + len(r.User)
	i.mu.Lock()
	r.Session = i.labels.of(c.Session)
	i.add(r)
	if len(i.subs) > 0 {
		i.publish(event{kind: evRow, row: r.snapshot()})
	}
	i.mu.Unlock()
	return context.WithValue(ctx, rowKey{}, r)
}

// CallEnded records where a request went, what the policy decided and how
// it was answered.
func (i *Inspector) CallEnded(ctx context.Context, c *traffic.Call) {
	r := rowOf(ctx)
	if r == nil {
		return
	}
	res, e := keep(c.Result, i.opts.MaxMessage), keepError(c.Err, i.opts.MaxMessage, true)
	i.mu.Lock()
	defer i.mu.Unlock()
	if !r.inRing { // pushed out while pending: the page is told how it ended, nothing is kept
		res, e = body{}, nil
	}
	r.Group, r.Server, r.Target, r.Rule, r.Action = c.Group, c.Server, clip(c.Target, maxName), c.Rule, c.Action
	r.Status, r.Result, r.Error, r.MS = string(c.Status), res, e, ms(c.Duration)
	i.grow(r, res.size()+e.size()+len(r.Target))
	if len(i.subs) > 0 {
		i.publish(event{kind: evEnd, row: r.outcome()})
	}
}

// HopStarted records nothing: a hop is kept whole when it ends.
func (i *Inspector) HopStarted(ctx context.Context, _ *traffic.Hop) context.Context { return ctx }

// HopEnded adds a request to an upstream to the row of the request it was
// made for.
func (i *Inspector) HopEnded(ctx context.Context, h *traffic.Hop) {
	r := rowOf(ctx)
	if r == nil {
		return
	}
	params, result := keepBoth(h.Params, h.Result, i.opts.MaxMessage)
	hp := hop{Group: h.Group, Server: h.Server, Transport: h.Transport, Protocol: h.Protocol, Method: h.Method, Start: h.Start,
		Params: params, Result: result, Error: keepError(h.Err, i.opts.MaxMessage, false), MS: ms(h.Duration)}
	i.mu.Lock()
	defer i.mu.Unlock()
	if !r.inRing || len(r.Hops) >= maxHops {
		r.Omitted++
		return
	}
	r.Hops = append(r.Hops, hp)
	i.grow(r, hp.Params.size()+hp.Result.size()+hp.Error.size())
	if len(i.subs) > 0 {
		i.publish(event{kind: evHop, seq: r.Seq, hop: &hp})
	}
}

// Message adds a notification or an upstream's request to the row of the
// request it came during, or makes it a row of its own.
func (i *Inspector) Message(ctx context.Context, m *traffic.Message) {
	msg := message{Time: time.Now(), Direction: string(m.Direction), Server: m.Server, Method: clip(m.Method, maxName),
		Request: m.Request, Params: keep(m.Params, i.opts.MaxMessage),
		Result: keep(m.Result, i.opts.MaxMessage), Error: keepError(m.Err, i.opts.MaxMessage, false), MS: ms(m.Duration)}
	n := msg.Params.size() + msg.Result.size() + msg.Error.size() + len(msg.Method)
	i.mu.Lock()
	defer i.mu.Unlock()
	msg.Session = i.labels.of(m.Session)
	if r := rowOf(ctx); r != nil {
		if !r.inRing || len(r.Messages) >= maxMessages {
			r.Omitted++
			return
		}
		r.Messages = append(r.Messages, msg)
		i.grow(r, n)
		if len(i.subs) > 0 {
			i.publish(event{kind: evMessage, seq: r.Seq, msg: &msg})
		}
		return
	}
	r := &row{Kind: kindMessage, Session: msg.Session, Server: m.Server, Method: msg.Method, Start: msg.Time,
		Status: string(traffic.StatusOK), Messages: []message{msg}, MS: msg.MS, bytes: n}
	switch {
	case m.NoClient:
		r.Status = string(traffic.StatusNoClient) // answered by the hub, as it must be: no failure
	case m.Err != nil:
		r.Status = string(traffic.StatusError)
	}
	i.add(r)
	if len(i.subs) > 0 {
		i.publish(event{kind: evRow, row: r.snapshot()})
	}
}
