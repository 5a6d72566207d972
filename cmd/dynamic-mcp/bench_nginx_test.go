package main

// BenchmarkNginx puts a figure on the balancer of examples/nginx: calls/s
// of tools/call through nginx (TLS ended there, one replica behind it)
// against the same calls straight to the hub's HTTP face, on the fake's
// echo, in one run:
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench Nginx -benchtime 3000x
//
// Lines inflight={1,32}: p50/p99 and calls/s of each path, and
// nginx/direct-tput-ratio. It needs nginx (skipped without it, but not in
// CI); the hub runs without auth on loopback, so that both paths only
// proxy.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

func BenchmarkNginx(b *testing.B) {
	nginxBinary(b)
	hubURL, _ := startHTTPHubForBench(b, flatConfig())
	n := startNginx(b, strings.TrimSuffix(strings.TrimPrefix(hubURL, "http://"), "/mcp"))
	direct := openHTTPSession(b, hubURL)
	proxied := openHTTPSessionWith(b, n.https+"/mcp", n.client)
	directCall, proxiedCall := direct.caller("f__echo"), proxied.caller("f__echo")
	await.Costly(b, 30*time.Second, "f__echo through nginx", func() bool { return proxiedCall() == nil })
	warmUp(b, directCall, proxiedCall)
	for _, inflight := range benchInflight {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			s, err := measureRounds(b.N, inflight, directCall, proxiedCall)
			if err != nil {
				b.Fatal(err)
			}
			s[0].report(b, "direct")
			s[1].report(b, "nginx")
			b.ReportMetric(s[1].perSecond()/s[0].perSecond(), "nginx/direct-tput-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// openHTTPSessionWith initializes a session with the server at url over
// hc, as openHTTPSession does over a client of its own.
func openHTTPSessionWith(b *testing.B, url string, hc *http.Client) *httpSession {
	b.Helper()
	s := &httpSession{url: url, hc: hc}
	_, header, err := s.post("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "dynamic-mcp-bench", "version": "1"},
	})
	if err != nil {
		b.Fatalf("initialize %s: %v", url, err)
	}
	s.id = header.Get("Mcp-Session-Id")
	if _, _, err := s.post("notifications/initialized", nil); err != nil {
		b.Fatalf("notifications/initialized %s: %v", url, err)
	}
	return s
}
