package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// exchange is one request of a transcript and the answer the hub gave.
type exchange struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// TestGoldenTranscripts replays testdata/golden/<name>.jsonl against the hub
// on <name>.yaml and compares every answer with <name>.golden.jsonl: tool
// definitions, results and errors pass through with no field lost.
func TestGoldenTranscripts(t *testing.T) {
	for _, name := range []string{"flat", "dynamic"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(repoDir, "testdata", "golden")
			cfg, err := os.ReadFile(filepath.Join(dir, name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			c := startHub(t, strings.ReplaceAll(string(cfg), "${FAKE}", fakeBin))
			c.initialize("2025-11-25")
			if name == "flat" {
				c.waitFlatTools(fakeTools)
			} else {
				c.waitGroupsReady("fake")
			}
			var got []exchange
			for _, ex := range readTranscript(t, filepath.Join(dir, name+".jsonl")) {
				var params any
				if ex.Params != nil {
					params = ex.Params
				}
				res, rpcErr := c.request(ex.Method, params)
				ex.Result = res
				if rpcErr != nil {
					ex.Error, _ = json.Marshal(rpcErr)
				}
				got = append(got, ex)
			}
			goldenPath := filepath.Join(dir, name+".golden.jsonl")
			if *update {
				var b bytes.Buffer
				for _, ex := range got {
					line, _ := json.Marshal(ex)
					b.Write(line)
					b.WriteByte('\n')
				}
				if err := os.WriteFile(goldenPath, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := readTranscript(t, goldenPath)
			if len(want) != len(got) {
				t.Fatalf("golden has %d exchanges, transcript %d: run go test -update", len(want), len(got))
			}
			for i := range got {
				g, _ := json.Marshal(got[i])
				w, _ := json.Marshal(want[i])
				assertSameJSON(t, fmt.Sprintf("exchange %d (%s)", i+1, want[i].Method), g, w)
			}
		})
	}
}

func readTranscript(t *testing.T, path string) []exchange {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exchange
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if len(bytes.TrimSpace(s.Bytes())) == 0 {
			continue
		}
		var ex exchange
		mustUnmarshal(t, s.Bytes(), &ex)
		out = append(out, ex)
	}
	return out
}
