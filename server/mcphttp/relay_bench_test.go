package mcphttp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// BenchmarkGETStreamNotification is one notification the hub sends a
// session, from Notify until the client has read it off its GET stream,
// one at a time: "memory" is a face without a store (the event log in
// memory), "store" one with a store (appended to PostgreSQL, on a local
// cluster, and delivered on the notice); their difference is what the
// relay costs a notification (docs/performance.md's figure). Beside the
// wall time, which a loaded machine stretches, it reports the CPU time a
// notification of this process (the face and the client,
// proc-cpu-µs/op) and of the PostgreSQL cluster's processes
// (pg-cpu-µs/op), from /proc (Linux).
func BenchmarkGETStreamNotification(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		h, _ := runHub(b, flatFakeYAML(b.TempDir(), "", ""), nil)
		face := New(h, Options{NoAuth: true}, testLogger())
		ts := httptest.NewServer(face)
		b.Cleanup(func() { ts.Close(); face.Close() })
		benchNotify(b, face, ts.URL)
	})
	b.Run("store", func(b *testing.B) {
		face, base := relayReplica(b, pgtest.Start(b), flatFakeYAML(b.TempDir(), "", ""))
		benchNotify(b, face, base)
	})
}

func benchNotify(b *testing.B, face *Server, base string) {
	post := func(session, body string) string {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(headerSessionID, session)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get(headerSessionID)
	}
	session := post("", initializeMsg)
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, session)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET: %v %v", err, resp)
	}
	defer resp.Body.Close()
	var hs *httpSession
	face.sessions.mu.Lock()
	for _, x := range face.sessions.sessions {
		hs = x
	}
	face.sessions.mu.Unlock()
	await.For(b, 5e9, "the GET stream", func() bool { return hs.st.standaloneOpen() })
	sc := bufio.NewScanner(resp.Body)
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"bench","data":"x"}}`)
	proc0, pg0 := selfCPU(), postgresCPU()
	for b.Loop() {
		hs.Notify(context.Background(), msg)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: {") {
				break
			}
		}
	}
	if proc := selfCPU() - proc0; proc > 0 {
		b.ReportMetric(float64(proc.Microseconds())/float64(b.N), "proc-cpu-µs/op")
	}
	if pg := postgresCPU() - pg0; pg > 0 {
		b.ReportMetric(float64(pg.Microseconds())/float64(b.N), "pg-cpu-µs/op")
	}
}

// postgresCPU is the CPU time used by the PostgreSQL servers this process
// started (pgtest's cluster) and their processes (the backends of the
// connections, the WAL writer), from /proc; 0 where there is none.
func postgresCPU() time.Duration {
	entries, _ := os.ReadDir("/proc")
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 4, 14 and 15,
		// counted after the command's closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || !bytes.HasPrefix(stat[bytes.IndexByte(stat, '(')+1:], []byte("postgres")) {
			continue
		}
		f := strings.Fields(string(stat[i+2:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		procs[pid] = proc{ppid, utime + stime}
	}
	var ticks int64
	for _, p := range procs {
		if p.ppid == os.Getpid() { // a postmaster of ours
			ticks += p.ticks
		} else if pp, ok := procs[p.ppid]; ok && pp.ppid == os.Getpid() { // its processes
			ticks += p.ticks
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
