package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// newTestHub is a hub with no upstreams, for the protocol edge of the hub.
func newTestHub(mode config.Mode) *Hub {
	cfg := &config.Config{Mode: mode, Settings: config.Settings{PageSize: 10, CallTimeout: config.DefaultCallTimeout, MaxMessageSize: 1 << 20}, Audit: config.Audit{Path: "off"}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := New(cfg, upstream.New(cfg, logger), logger)
	if err != nil {
		panic(err)
	}
	return h
}

// FuzzReceive feeds arbitrary lines to the hub's stdio face: whatever
// arrives, it must not panic, and everything it writes back must be one
// JSON message a line.
func FuzzReceive(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"call_dynamic_tool","arguments":{"group":"g","name":"t","args":[]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{"cursor":"MQ"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"x://y"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"x://y"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[1,2]`, `not json`, `{"id":{}}`, `{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","METHOD":"x"}`, `{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, mode := range []config.Mode{config.ModeDynamic, config.ModeFlat} {
			h := newTestHub(mode)
			var out bytes.Buffer
			if err := h.ServeStdio(context.Background(), strings.NewReader(line+"\n"), &out); err != nil {
				t.Fatal(err)
			}
			for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
				if len(l) > 0 && !json.Valid(l) {
					t.Fatalf("wrote invalid JSON %q for input %q", l, line)
				}
			}
		}
	})
}
