package main

// BenchmarkNginxReplicas puts figures on replicas behind the balancer of
// examples/nginx: calls/s of tools/call through nginx (TLS ended there,
// round-robin) to one replica and to three, each with http.session_keys
// (so that with three, each request goes to the next replica, which
// serves the session from its sealed id), on the fake's echo, in one run:
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench NginxReplicas -benchtime 3000x
//
// Lines inflight={1,32}: p50/p99 and calls/s of each, and
// 3/1-tput-ratio. On one machine the replicas, nginx and the client share
// its cores: the figure is the cost of the hops, not a capacity. It needs
// nginx (skipped without it, but not in CI).

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

func BenchmarkNginxReplicas(b *testing.B) {
	nginxBinary(b)
	path := replicaConfig(b, "")
	replicas := []*hubReplica{startReplica(b, path), startReplica(b, path), startReplica(b, path)}
	addrs := make([]string, len(replicas))
	for i, r := range replicas {
		addrs[i] = r.addr
		await.Costly(b, 20*time.Second, "replica "+r.addr+" to be ready", r.ready)
	}
	one := startNginxReplicas(b, addrs[:1], true)
	three := startNginxReplicas(b, addrs, true)
	oneSession := openHTTPSessionWith(b, one.https+"/mcp", &http.Client{Transport: authorized{one.client.Transport}})
	threeSession := openHTTPSessionWith(b, three.https+"/mcp", &http.Client{Transport: authorized{three.client.Transport}})
	oneCall, threeCall := oneSession.caller("f__echo"), threeSession.caller("f__echo")
	await.Costly(b, 30*time.Second, "f__echo through nginx", func() bool { return oneCall() == nil && threeCall() == nil })
	warmUp(b, oneCall, threeCall)
	for _, inflight := range benchInflight {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			s, err := measureRounds(b.N, inflight, oneCall, threeCall)
			if err != nil {
				b.Fatal(err)
			}
			s[0].report(b, "1-replica")
			s[1].report(b, "3-replicas")
			b.ReportMetric(s[1].perSecond()/s[0].perSecond(), "3/1-tput-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkReplicaResume puts a figure on a session outliving its
// replica, TestReplicasResumeASessionWhoseReplicaDied's setup timed:
// three replicas behind Debian's nginx (examples/nginx), the official
// TypeScript SDK client (testdata/sdkclient/replicas.mjs) initializes and
// calls, the replica that served its session is killed (SIGKILL), and
// the client calls until one succeeds, in the same session. Each
// iteration starts all of it afresh (a few seconds each):
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench ReplicaResume -benchtime 3x
//
// Lines round-robin (every replica had served the session) and backup (a
// primary and two backup servers, which have not): resume-ms, the time
// from the client's word of the kill (written once the killed process
// was reaped) to its first successful call, and attempts/resume, the
// calls that took, each the mean of the iterations (the client's line of
// each is logged). It
// needs nginx and the SDK (skipped without them, but not in CI).
func BenchmarkReplicaResume(b *testing.B) {
	nginxBinary(b)
	npmTestTool(b, "@modelcontextprotocol", "sdk", "package.json")
	for _, layout := range []struct {
		name    string
		backups bool
	}{{"round-robin", false}, {"backup", true}} {
		b.Run(layout.name, func(b *testing.B) {
			var ms, attempts, n int
			for b.Loop() {
				after := replicaDies(b, layout.backups)
				ms += after.ResumeMS
				attempts += after.Attempts
				n++
			}
			b.ReportMetric(float64(ms)/float64(n), "resume-ms")
			b.ReportMetric(float64(attempts)/float64(n), "attempts/resume")
			b.ReportMetric(0, "ns/op")
		})
	}
}
