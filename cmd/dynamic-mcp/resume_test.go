package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// cutProxy forwards TCP connections to a backend; cut closes every one
// open and holds new ones (accepted, not forwarded) until let.
type cutProxy struct {
	ln      net.Listener
	backend string
	wg      sync.WaitGroup // the accept loop and every copy

	mu    sync.Mutex // guards conns and held
	conns map[net.Conn]bool
	held  chan struct{} // closed by let; nil while not cut
}

func startCutProxy(t *testing.T, backend string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, backend: backend, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() { // ends when ln is closed
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut(); p.let(); p.wg.Wait() })
	return p
}

func (p *cutProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = true
}

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held != nil {
		<-held
	}
	b, err := net.Dial("tcp", p.backend)
	if err != nil {
		c.Close()
		return
	}
	p.track(c)
	p.track(b)
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); b.Close(); done <- struct{}{} }()
	go func() { io.Copy(c, b); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// cut closes every connection and holds new ones until let.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

func (p *cutProxy) let() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// The official TypeScript SDK client, whose GET stream is cut (every
// connection through a proxy closed, new ones held) while log messages
// are sent to its session, reconnects with Last-Event-ID and gets exactly
// the missed ones, in order, then the live ones (testdata/sdkclient/resume.mjs).
func TestSDKClientResumesGETStream(t *testing.T) {
	t.Parallel()
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	path := writeConfig(t, fmt.Sprintf("mode: flat\nhttp:\n  session_keys: [\"${DYNAMIC_MCP_SESSION_KEY}\"]\ngroups:\n  f: { description: fake, command: %q, args: [\"-flood\"] }\n", fakeBin))
	r := startReplica(t, path)
	await.Costly(t, 20*time.Second, "the hub to be ready", r.ready)
	proxy := startCutProxy(t, r.addr)

	ctx, cancel := untilHung(t)
	defer cancel()
	node := startNodeScript(t, ctx, "", "resume.mjs",
		"--url", "http://"+proxy.ln.Addr().String()+"/mcp", "--direct", "http://"+r.addr+"/mcp", "--token", testToken)
	defer node.stop(t)
	node.next(t, "live")
	node.next(t, "cut me")
	proxy.cut()
	io.WriteString(node.stdin, "cut\n")
	node.next(t, "flooded")
	proxy.let()
	io.WriteString(node.stdin, "let\n")
	node.next(t, "resumed")
}
