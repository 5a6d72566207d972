package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// On one processor, answers sent while other requests are in flight go
// out through the writer, several in one write (coalesce): every request
// is still answered once, and what a handler sent before its answer (a
// notification) still comes first.
func TestCoalescedAnswersKeepTheirOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	defer outR.Close()
	const n = 32
	started, release := make(chan struct{}, n), make(chan struct{})
	var c *Conn
	c = NewConn(NewLineStream(inR, outW, 0), ConnOptions{
		Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
			started <- struct{}{}
			<-release
			_ = c.NotifyRawContext(ctx, EncodeNotification("notifications/progress", json.RawMessage(`{"id":`+string(m.ID)+`}`)))
			return json.RawMessage(`{"id":` + string(m.ID) + `}`), nil
		},
	})
	if !c.coalescing() {
		t.Fatal("a line stream over pipes on one processor does not coalesce")
	}
	c.Start()
	defer c.Close()
	var reqs strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&reqs, `{"jsonrpc":"2.0","id":%d,"method":"m"}`+"\n", i)
	}
	if _, err := inW.WriteString(reqs.String()); err != nil {
		t.Fatal(err)
	}
	for range n {
		<-started
	}
	close(release)
	notified, answered := map[string]bool{}, map[string]bool{}
	br := bufio.NewReader(outR)
	for len(answered) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		m, err := Decode([]byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m.IsNotification():
			var p struct{ ID json.RawMessage }
			_ = json.Unmarshal(m.Params, &p)
			notified[string(p.ID)] = true
		case m.IsResponse():
			id := string(m.ID)
			if answered[id] {
				t.Fatalf("request %s answered twice", id)
			}
			if !notified[id] {
				t.Fatalf("request %s answered before its notification", id)
			}
			answered[id] = true
		}
	}
}
