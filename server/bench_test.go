package server

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/procuse"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// BenchmarkStdioToolCall is one flat-mode tools/call through the hub's
// stdio face to the fake upstream's echo, in process, one at a time: what
// the hub adds to a call, for profiling (-cpuprofile). The end-to-end
// figures are cmd/dynamic-mcp's BenchmarkToolCallLatency.
func BenchmarkStdioToolCall(b *testing.B) {
	benchToolCalls(b, fakeHubB(b))
}

// BenchmarkStdioToolCallUnchecked is BenchmarkStdioToolCall with
// validate_args: off: the same work as a hub from before the argument
// check (3c1d5a4), to compare with it.
func BenchmarkStdioToolCallUnchecked(b *testing.B) {
	benchToolCalls(b, fakeHubSettingsB(b, "validate_args: off"))
}

// BenchmarkStdioToolCallMinimal is BenchmarkStdioToolCall against the
// fake's -minimal echo, which costs next to nothing: the hub's own cost
// per call (-benchmem, -cpuprofile, -memprofile), as cmd/dynamic-mcp's
// BenchmarkStdioOverhead measures it from outside.
func BenchmarkStdioToolCallMinimal(b *testing.B) {
	b.ReportAllocs()
	benchToolCalls(b, fakeHubB(b, "-minimal"))
}

// BenchmarkStdioDynamicToolCallMinimal is BenchmarkStdioToolCallMinimal
// in dynamic mode: the echo called through call_dynamic_tool, as
// cmd/dynamic-mcp's BenchmarkStdioOverhead calls it in its dynamic lines.
func BenchmarkStdioDynamicToolCallMinimal(b *testing.B) {
	b.ReportAllocs()
	yaml := strings.Replace(flatFakeYAML(b.TempDir(), "call_timeout: 5s", "    args: [\"-minimal\"]\n"), "mode: flat", "mode: dynamic", 1)
	h, mgr := runHub(b, yaml, true)
	await.For(b, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	benchCalls(b, h, `{"name":"call_dynamic_tool","arguments":{"group":"f","name":"echo","args":{"text":"x"}}}`)
}

// benchToolCalls makes BenchmarkStdioToolCall's calls to h, whatever is
// attached to it, so the variants measure only what they attach.
func benchToolCalls(b *testing.B, h *Hub) {
	benchCalls(b, h, `{"name":"f__echo","arguments":{"text":"x"}}`)
}

// benchCalls makes tools/call requests with params to h, one at a time.
func benchCalls(b *testing.B, h *Hub, params string) {
	c := servePipes(b, h, StdioOptions{})
	c.initialize()
	// One call before the loop: what a hub does once (the tool's schema
	// compiled on its first call, about 20,000 allocations) is not a
	// call's cost.
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
	if a := c.answer("1"); strings.Contains(a, `"isError":true`) || strings.Contains(a, `"error"`) {
		b.Fatalf("the first call failed: %s", a)
	}
	i := 1
	report := meterCalls(b)
	for b.Loop() {
		i++
		id := fmt.Sprint(i)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`)
		c.answer(id)
	}
	report()
}

// meterCalls counts, from /proc, what this process (the hub and the
// in-process client) and apart its children (the fake upstream) spend
// from now until the func it returns reports it per call: CPU time and
// context switches, which the machine's load changes far less than
// ns/op, and which tell the hub's cost from the fake's.
func meterCalls(b *testing.B) func() {
	self, children := procuse.Self()
	return func() {
		s, c := procuse.Self()
		s, c = s.Sub(self), c.Sub(children)
		n := float64(b.N)
		b.ReportMetric(float64(s.CPU.Microseconds())/n, "proc-cpu-µs/op")
		b.ReportMetric(float64(s.Slices)/n, "proc-cs/op")
		b.ReportMetric(float64(c.CPU.Microseconds())/n, "fake-cpu-µs/op")
		b.ReportMetric(float64(c.Slices)/n, "fake-cs/op")
	}
}

// BenchmarkDirectToolCall is the same call made to the fake upstream
// directly, over its stdin and stdout: the floor BenchmarkStdioToolCall
// is compared with.
func BenchmarkDirectToolCall(b *testing.B) {
	cmd := exec.Command(fakeBin)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewReader(outPipe)
	roundTrip := func(id, msg string) {
		io.WriteString(in, msg+"\n")
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, `"id":`+id+`,`) {
				return
			}
		}
	}
	roundTrip("0", initializeMsg)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	i := 0
	report := meterCalls(b)
	for b.Loop() {
		i++
		id := fmt.Sprint(i)
		roundTrip(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	}
	report()
}
