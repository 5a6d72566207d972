package jsonrpc

import (
	"context"
	"strings"
	"testing"
)

// With CallIDPrefix, a Conn's own requests carry string ids of that
// prefix, and only an answer with exactly such an id resolves a call: the
// same number, bare or under another prefix, is another replica's.
func TestCallIDPrefix(t *testing.T) {
	c, p := newPair(t, ConnOptions{CallIDPrefix: "dm-ab12-"})
	done := make(chan string, 1)
	go func() {
		res, err := c.Call(context.Background(), "roots/list", nil)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- string(res)
	}()
	req := p.recv()
	if !strings.Contains(req, `"id":"dm-ab12-1"`) {
		t.Fatalf("request: %s", req)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":{"bare":true}}`)
	p.send(`{"jsonrpc":"2.0","id":"dm-cd34-1","result":{"other":true}}`)
	p.send(`{"jsonrpc":"2.0","id":"dm-ab12-1","result":{"mine":true}}`)
	if got := <-done; got != `{"mine":true}` {
		t.Fatalf("answer taken: %s", got)
	}
}
