package fakeupstream

import (
	"bufio"
	"encoding/json"
	"os"
)

// minimal makes the fake the least an MCP server can be, for the
// benchmarks: one echo tool, every answer but its id written in advance,
// requests answered in order on the reading goroutine, and one write per
// run of requests that arrived together. Its round trip is the floor a
// hub's cost is measured against (issue 33: "well under 100 µs").
var minimal = flags.Bool("minimal", false, "serve only initialize, tools/list and tools/call echo, from answers made in advance (for benchmarks)")

// minimalAnswers are the results the minimal fake sends, by method.
var minimalAnswers = map[string]string{
	"initialize": `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"minimal","version":"1"}}`,
	"tools/list": `{"tools":[{"name":"echo","description":"Echo text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`,
	"tools/call": `{"content":[{"type":"text","text":"x"}]}`,
	"ping":       `{}`,
}

// serveMinimal is Main with -minimal: it answers until stdin ends.
func serveMinimal() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	for {
		line, err := in.ReadSlice('\n')
		req.ID, req.Method = nil, ""
		if len(line) > 0 && json.Unmarshal(line, &req) == nil && len(req.ID) > 0 && req.Method != "" {
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.Write(req.ID)
			if result, ok := minimalAnswers[req.Method]; ok {
				w.WriteString(`,"result":`)
				w.WriteString(result)
			} else {
				w.WriteString(`,"error":{"code":-32601,"message":"Method not found"}`)
			}
			w.WriteString("}\n")
		}
		if in.Buffered() == 0 || err != nil {
			if w.Flush() != nil {
				return
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
