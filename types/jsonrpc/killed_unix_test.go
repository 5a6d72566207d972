//go:build unix

package jsonrpc

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A peer killed while its 5 MB answer is half written (a child SIGKILLed
// by the OOM killer): the half line is not taken for an answer, the call
// fails at once with the end of the stream, and Close returns.
func TestAttackPeerKilledMidAnswer(t *testing.T) {
	cmd := exec.Command("sh", "-c", `read line
printf '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'
head -c 2500000 /dev/zero | tr '\0' x
kill -9 $$`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := NewConn(NewLineStream(stdout, stdin, 5<<20), ConnOptions{})
	c.Start()
	ctx, cancel := context.WithTimeout(t.Context(), await.Slow*10*time.Second) // bounds a hang
	defer cancel()
	start := time.Now()
	res, err := c.Call(ctx, "tools/call", []byte(`{"name":"big"}`))
	if err == nil {
		t.Fatalf("the half answer was taken: %d bytes", len(res))
	}
	if ctx.Err() != nil {
		t.Fatalf("the call waited for its timeout: %v", err)
	}
	t.Logf("failed after %s: %v", time.Since(start), err)
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("Close did not return")
	}
	_ = cmd.Wait()
}
