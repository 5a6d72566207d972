package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A request answered with the turn at reading does not hold up what the
// peer sends meanwhile past inlineFor (in the bubble's clock, which moves
// only when every goroutine waits): the answer to a request of ours made
// on the same Conn while answering, a cancellation, another request.
func TestTurnPassesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := net.Pipe()
		var c *Conn
		slow := make(chan struct{})
		c = NewConn(NewLineStream(a, a, 0), ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
			switch m.Method {
			case "ask": // asks the peer, as a hub asks its client during a call
				return c.Call(ctx, "roots/list", nil)
			case "wait": // slow, with no peer: ends when cancelled or told
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-slow:
				}
			}
			return json.RawMessage(`{}`), nil
		}})
		c.Start()
		defer c.Close()
		defer b.Close()
		br := bufio.NewReader(b)
		send := func(s string) {
			if _, err := io.WriteString(b, s+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		recv := func() string {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return line
		}

		start := time.Now()
		send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
		asked := recv()
		if !strings.Contains(asked, `"roots/list"`) {
			t.Fatalf("the peer was sent %s", asked)
		}
		var q struct{ ID json.RawMessage }
		json.Unmarshal([]byte(asked), &q)
		send(`{"jsonrpc":"2.0","id":` + string(q.ID) + `,"result":{"roots":[]}}`)
		if got := recv(); !strings.Contains(got, `"id":1,`) {
			t.Fatalf("answer %s", got)
		}
		if d := time.Since(start); d > inlineFor {
			t.Errorf("the answer to our own request was read after %v, want within %v", d, inlineFor)
		}

		start = time.Now()
		send(`{"jsonrpc":"2.0","id":2,"method":"wait"}`)
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		if d := time.Since(start); d > inlineFor {
			t.Errorf("a cancellation was read %v after its request, want within %v", d, inlineFor)
		}
		synctest.Wait() // the cancelled request is done, unanswered

		send(`{"jsonrpc":"2.0","id":3,"method":"wait"}`)
		synctest.Wait() // 3 is answered with the turn, waiting
		start = time.Now()
		send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
		if got := recv(); !strings.Contains(got, `"id":4,`) {
			t.Fatalf("answer %s", got)
		}
		if d := time.Since(start); d > inlineFor {
			t.Errorf("a request sent while another was answered was read after %v, want within %v", d, inlineFor)
		}
		close(slow)
		if got := recv(); !strings.Contains(got, `"id":3,`) {
			t.Fatalf("answer %s", got)
		}
	})
}
