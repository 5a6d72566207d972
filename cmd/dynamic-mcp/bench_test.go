package main

// BenchmarkToolCallLatency puts figures on what the hub costs a client,
// the targets of issue 11, in one run:
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench ToolCallLatency -benchtime 3000x
//
// -benchtime Nx is the number of calls measured per path and line; 3000x
// takes about 15 s once the binaries are built. Its lines:
//
//	stdio/inflight={1,32}  the fake's echo called directly over stdio and
//	                       through the hub binary over stdio: p50/p99 of both,
//	                       what the hub adds, calls/s of both; at 32 in flight
//	                       stdio-tput-ratio = hub calls/s / direct calls/s.
//	http/inflight={1,32}   the same upstream behind the hub's Streamable HTTP
//	                       face and behind a plain mcp-go proxy
//	                       (testdata/mcpgoproxy, what TBXark/mcp-proxy does),
//	                       both driven by the same net/http client loop:
//	                       http-p50-ratio = hub p50 / proxy p50 at 1 in
//	                       flight, http-tput-ratio = hub calls/s / proxy
//	                       calls/s at 32. With DYNAMIC_MCP_BENCH_TBXARK
//	                       naming a TBXark/mcp-proxy binary (built outside
//	                       the repo), it measures that too, on the same
//	                       fake: tbxark's p50 and calls/s, and the hub's
//	                       and the stand-in's ratios to it
//	                       (hub/tbxark-*, proxy/tbxark-*). Each server's
//	                       CPU time per call, wake-ups per call and its
//	                       upstream's CPU per call, and the client's, from
//	                       /proc (*-cpu-µs/call, *-wakeups/call,
//	                       *-upstream-cpu-µs/call, *-client-cpu-µs/call,
//	                       hub/tbxark-cpu-ratio). With DYNAMIC_MCP_BENCH_BASE
//	                       naming another build of the hub (say main's), that
//	                       too, as base (hub/base-*). hub-rss-MB (and
//	                       tbxark-rss-MB, base-rss-MB): each server's VmRSS
//	                       right after the line's calls (the hub is the
//	                       test binary: about 2 MiB more than a built one).
//	rss                    hub-rss-MB: VmRSS of a hub serving 4 fake upstreams
//	                       after 400 calls (and hub-hwm-MB, its peak).
//
// ns/op is left out: each line times two paths, and the metrics above are
// what it measures. The audit trail is off wherever the hub is compared, so
// that both sides only proxy; the rss hub runs with the default config.
// With -v the http line also logs whether each server answered tools/call
// with application/json or with text/event-stream. Plain go test, without
// -bench, runs none of this.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// benchInflight are the numbers of calls in flight each path is measured at.
var benchInflight = []int{1, 32}

// BenchmarkToolCallLatency is described, with the command that runs it, at
// the top of this file.
func BenchmarkToolCallLatency(b *testing.B) {
	b.Run("stdio", benchStdio)
	b.Run("http", benchHTTP)
	b.Run("rss", benchRSS())
}

// flatConfig serves the fake as group f in flat mode, so that its echo is
// f__echo, with the audit trail off.
func flatConfig() string {
	return fmt.Sprintf("mode: flat\naudit: { path: off }\ngroups:\n  f: { description: fast, command: %q }\n", fakeBin)
}

func benchStdio(b *testing.B) {
	direct := startProcess(b, nil, fakeBin)
	direct.initialize("2025-06-18")
	hub := startHub(b, flatConfig(), "--log-level", "error")
	hub.initialize("2025-06-18")
	hub.waitFlatTools(fakeTools)
	directCall, hubCall := stdioCaller(direct, "echo"), stdioCaller(hub, "f__echo")
	warmUp(b, directCall, hubCall)
	for _, inflight := range benchInflight {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			d, h, err := measurePair(b.N, inflight, directCall, hubCall)
			if err != nil {
				b.Fatal(err)
			}
			d.report(b, "direct")
			h.report(b, "hub")
			for _, q := range []struct {
				name string
				p    float64
			}{{"p50", 0.50}, {"p99", 0.99}} {
				b.ReportMetric(micros(h.quantile(q.p)-d.quantile(q.p)), q.name+"-added-µs")
			}
			if inflight > 1 {
				b.ReportMetric(h.perSecond()/d.perSecond(), "stdio-tput-ratio")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchRSS returns the rss benchmark. Its figure does not depend on b.N, so
// it measures once per -count, in the framework's first run (b.N == 1), and
// reports that figure again in the runs that follow.
func benchRSS() func(*testing.B) {
	var rss, hwm float64
	var measured bool
	return func(b *testing.B) {
		if b.N == 1 || !measured {
			rss, hwm = hubRSS(b)
			measured = true
		}
		b.ReportMetric(rss, "hub-rss-MB")
		b.ReportMetric(hwm, "hub-hwm-MB")
		b.ReportMetric(0, "ns/op")
	}
}

// hubRSS starts the hub on 4 fake upstreams, makes 400 calls spread over
// them, 32 at a time, and reads the hub's resident and peak resident set
// sizes, in MiB. The hub is built for this: the test binary that the other
// lines run as the hub carries the tests and what only they use, about
// 2 MiB more resident.
func hubRSS(b *testing.B) (rss, hwm float64) {
	const upstreams = 4
	var cfg strings.Builder
	cfg.WriteString("mode: flat\ngroups:\n")
	for i := range upstreams {
		fmt.Fprintf(&cfg, "  f%d: { description: fake %d, command: %q }\n", i, i, fakeBin)
	}
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	hub := startProcess(b, []string{"DYNAMIC_MCP_HOME=" + b.TempDir()}, buildForBench(b, "."), "serve", "-c", path, "--log-level", "error")
	hub.initialize("2025-06-18")
	hub.waitFlatTools(upstreams * fakeTools)
	var calls []func() error
	for i := range upstreams {
		calls = append(calls, stdioCaller(hub, fmt.Sprintf("f%d__echo", i)))
	}
	var next atomic.Int64
	if _, err := measure(400, 32, func() error { return calls[next.Add(1)%upstreams]() }); err != nil {
		b.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", hub.cmd.Process.Pid))
	if err != nil {
		b.Skipf("no /proc to read the hub's RSS from: %v", err)
	}
	return statusMiB(b, status, "VmRSS:"), statusMiB(b, status, "VmHWM:")
}

// statusMiB reads a "Key:   1234 kB" line of /proc/PID/status, in MiB.
func statusMiB(b *testing.B, status []byte, key string) float64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kB, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("%s in /proc/PID/status: %v", key, err)
			}
			return kB / 1024
		}
	}
	b.Fatalf("no %s in /proc/PID/status", key)
	return 0
}

// stdioCaller returns a call of tool's echo on c that reports failures as
// errors, for measure's goroutines, which must not call b.Fatal.
func stdioCaller(c *client, tool string) func() error {
	return stdioToolCaller(c, tool, map[string]any{"text": "x"})
}

// stdioToolCaller is stdioCaller with the tool's arguments.
func stdioToolCaller(c *client, tool string, args map[string]any) func() error {
	params := map[string]any{"name": tool, "arguments": args}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.tr.SendRequest(ctx, mcptransport.JSONRPCRequest{
			JSONRPC: "2.0", ID: mcp.NewRequestId(c.nextID.Add(1)), Method: "tools/call", Params: params,
		})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", tool, err)
		}
		if resp.Error != nil {
			return fmt.Errorf("tools/call %s: error %d %s", tool, resp.Error.Code, resp.Error.Message)
		}
		return checkEcho(tool, resp.Result)
	}
}

// checkEcho makes sure a result is the echo's, not an isError result.
func checkEcho(tool string, result []byte) error {
	if !bytes.Contains(result, []byte(`"x"`)) || bytes.Contains(result, []byte(`"isError":true`)) {
		return fmt.Errorf("tools/call %s: unexpected result %s", tool, result)
	}
	return nil
}

// warmUp makes a few hundred calls on each path before anything is
// measured: connections, buffers and the processes' heaps settle.
func warmUp(b *testing.B, calls ...func() error) {
	for _, call := range calls {
		if _, err := measure(500, 32, call); err != nil {
			b.Fatal(err)
		}
	}
}

// sample is the latencies of a path's calls, sorted, and the wall time they
// took in all.
type sample struct {
	lat     []time.Duration
	elapsed time.Duration
	use     procUse // what the server spent on the calls, when metered
}

func (s sample) quantile(q float64) time.Duration { return quantile(s.lat, q) }

func (s sample) perSecond() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(len(s.lat)) / s.elapsed.Seconds()
}

// report reports the sample's p50, p99 and calls/s, named after path.
func (s sample) report(b *testing.B, path string) {
	b.ReportMetric(micros(s.quantile(0.50)), "p50-"+path+"-µs")
	b.ReportMetric(micros(s.quantile(0.99)), "p99-"+path+"-µs")
	b.ReportMetric(s.perSecond(), path+"-calls/s")
}

// measurePair measures n calls of each of two paths, inflight at a time,
// in alternating rounds (see measureRounds).
func measurePair(n, inflight int, callA, callB func() error) (a, b sample, err error) {
	s, err := measureRounds(n, inflight, callA, callB)
	if err != nil {
		return a, b, err
	}
	return s[0], s[1], nil
}

// measureRounds measures n calls of each path, inflight at a time, in
// rounds that take the paths in turn, so that a change in the machine's
// load over the run falls on every path alike.
func measureRounds(n, inflight int, calls ...func() error) ([]sample, error) {
	return measureRoundsMetered(n, inflight, calls, nil, nil)
}

// measureRoundsMetered is measureRounds that also counts, with meters[i]
// (where there is one), what the process serving calls[i] spent on them
// (sample.use); and calls around, when not nil, before each round of path
// i and the func it returns after that round: what the processes of a
// path spent is counted over its rounds alone.
func measureRoundsMetered(n, inflight int, calls []func() error, meters []procMeter, around func(i int) func()) ([]sample, error) {
	samples := make([]sample, len(calls))
	rounds := min(4, n)
	for r := range rounds {
		count := n/rounds + btoi(r < n%rounds)
		for i, call := range calls {
			var m procMeter
			if i < len(meters) {
				m = meters[i]
			}
			before, clientBefore := m.read(), clientCPU(m)
			after := func() {}
			if around != nil {
				after = around(i)
			}
			s, err := measure(count, inflight, call)
			after()
			if err != nil {
				return samples, err
			}
			samples[i].use = samples[i].use.add(m.read().sub(before))
			samples[i].use.client += clientCPU(m) - clientBefore
			samples[i].lat = append(samples[i].lat, s.lat...)
			samples[i].elapsed += s.elapsed
		}
	}
	for _, s := range samples {
		slices.Sort(s.lat)
	}
	return samples, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// measure makes n calls, inflight at a time, and returns each call's
// latency, sorted, and the wall time of them all. It stops at the first
// error.
func measure(n, inflight int, call func() error) (sample, error) {
	s := sample{lat: make([]time.Duration, n)}
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range min(inflight, n) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				if err := call(); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
				s.lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	s.elapsed = time.Since(start)
	if first != nil {
		return s, first
	}
	slices.Sort(s.lat)
	return s, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
