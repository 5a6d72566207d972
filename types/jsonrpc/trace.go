package jsonrpc

import (
	"context"
	"encoding/json"
)

type sentKey struct{}

// WithSent returns ctx carrying sent, which Call tells the id of the
// request it sends with ctx before the request goes out: a caller whose
// stream relates later messages to one of its requests (an HTTP upstream
// sends its own requests inside a call's answer) can tie them back to the
// call, as net/http/httptrace hooks a request's events through its ctx.
func WithSent(ctx context.Context, sent func(id json.RawMessage)) context.Context {
	return context.WithValue(ctx, sentKey{}, sent)
}

// traceSent tells ctx's hook, if any, that the request with id is sent.
func traceSent(ctx context.Context, id json.RawMessage) {
	if sent, ok := ctx.Value(sentKey{}).(func(json.RawMessage)); ok {
		sent(id)
	}
}
