package jsonrpc

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkConnCall is one call between two Conns over OS pipes, as
// between the hub and a stdio upstream: what the Conn costs a call, with
// the hand-offs between its goroutines.
func BenchmarkConnCall(b *testing.B) {
	c := benchPair(b)
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`)
	ctx, cancel := context.WithCancel(context.Background()) // a ctx that can end, as a call's does
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPair is a client Conn whose peer is a Conn answering every request
// with its params.
func benchPair(b *testing.B) *Conn {
	r1, w1, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	server := newBenchConn(r1, w2, ConnOptions{Handle: func(ctx context.Context, m *Message) (json.RawMessage, error) {
		return m.Params, nil
	}})
	client := newBenchConn(r2, w1, ConnOptions{})
	server.Start()
	client.Start()
	b.Cleanup(func() { client.Close(); server.Close() })
	return client
}

func newBenchConn(r, w *os.File, opts ConnOptions) *Conn {
	return NewConn(NewLineStream(r, w, 0), opts)
}

// BenchmarkConnCallParallel is BenchmarkConnCall with 32 calls in flight.
func BenchmarkConnCallParallel(b *testing.B) {
	c := benchPair(b)
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`)
	b.ReportAllocs()
	b.SetParallelism(16) // 32 callers on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for pb.Next() {
			if _, err := c.Call(ctx, "tools/call", params); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDecode is the decoding of a call as the HTTP face reads it
// from a POST's body, and of its answer as read from an upstream.
func BenchmarkDecode(b *testing.B) {
	for _, msg := range []struct{ name, text string }{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`},
		{"response", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`},
	} {
		b.Run(msg.name, func(b *testing.B) {
			raw := []byte(msg.text)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
