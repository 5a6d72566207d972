package mcphttp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// BenchmarkHTTPToolCall is one flat-mode tools/call POSTed to the HTTP
// face to the fake upstream's echo, in process, one at a time; the answer
// must be plain JSON (nothing came before it). observed is the same with
// the observers serve attaches to a hub that serves HTTP (the metrics and
// the inspector), so that -memprofile and -cpuprofile show what a call
// costs as users run it; observed-32 has 32 calls in flight; sessionless
// is a 2026-07-28 tools/call with no session (each POST answered alone,
// Host.Answer), unobserved.
func BenchmarkHTTPToolCall(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchHTTPToolCall(b, nil, 1) })
	b.Run("sessionless", benchHTTPSessionlessCall)
	observed := func() traffic.Observer {
		return traffic.Tee(telemetry.NewMetrics(nil, telemetry.MetricsOptions{}), inspect.New(inspect.Options{}))
	}
	b.Run("observed", func(b *testing.B) { benchHTTPToolCall(b, observed(), 1) })
	b.Run("observed-32", func(b *testing.B) { benchHTTPToolCall(b, observed(), 32) })
}

func benchHTTPSessionlessCall(b *testing.B) {
	h, _ := runHub(b, flatFakeYAML(b.TempDir(), "", ""), nil)
	face := New(h, Options{NoAuth: true}, testLogger())
	ts := httptest.NewServer(face)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(func() { hc.CloseIdleConnections(); ts.Close(); face.Close() })
	var id int
	for b.Loop() {
		id++
		resp, out, err := sessionlessEcho(hc, ts.URL, id)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"x"`) || resp.Header.Get("Content-Type") != "application/json" {
			b.Fatalf("sessionless tools/call: %d %s", resp.StatusCode, out)
		}
	}
}

// sessionlessEcho POSTs to the face at url a 2026-07-28 tools/call of
// f__echo with id and no session, and returns its response (its body
// read and closed) and body.
func sessionlessEcho(hc *http.Client, url string, id int) (*http.Response, []byte, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id)
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "f__echo")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, out, nil
}

func benchHTTPToolCall(b *testing.B, obs traffic.Observer, inflight int) {
	h, _ := runHub(b, flatFakeYAML(b.TempDir(), "", ""), obs)
	face := New(h, Options{NoAuth: true}, testLogger())
	ts := httptest.NewServer(face)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(func() { hc.CloseIdleConnections(); ts.Close(); face.Close() })
	var session string
	post := func(body string) (string, error) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if id := resp.Header.Get(headerSessionID); id != "" {
			session = id
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode == http.StatusOK && ct != "application/json" {
			return "", fmt.Errorf("answered %s: %s", ct, out)
		}
		return string(out), nil
	}
	call := func(id int64) error {
		out, err := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`, id))
		if err == nil && !strings.Contains(out, `"x"`) {
			err = fmt.Errorf("answer: %s", out)
		}
		return err
	}
	for _, m := range []string{initializeMsg, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if _, err := post(m); err != nil {
			b.Fatal(err)
		}
	}
	var id atomic.Int64
	if inflight == 1 {
		for b.Loop() {
			if err := call(id.Add(1)); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(max(1, inflight/runtime.GOMAXPROCS(0))) // about inflight goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(id.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
