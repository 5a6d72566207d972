package server

import (
	"fmt"
	"testing"
)

// BenchmarkStdioToolCall is one flat-mode tools/call through the hub's
// stdio face to the fake upstream's echo, in process, one at a time: what
// the hub adds to a call, for profiling (-cpuprofile). The end-to-end
// figures are cmd/dynamic-mcp's BenchmarkToolCallLatency.
func BenchmarkStdioToolCall(b *testing.B) {
	h := fakeHubB(b)
	c := servePipes(b, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint(i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`)
		c.answer(id)
	}
}
