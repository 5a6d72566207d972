package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// exactTools is how many tools testdata/fakeupstream adds with -exact.
const exactTools = 1

// exchange is one request of a transcript. Notes is how many notifications
// the request makes the hub send (list_changed aside, whose timing is the
// view's): the test waits for them and records them with the answer.
type exchange struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Notes  int             `json:"notes,omitempty"`
}

// TestGoldenTranscripts replays testdata/golden/<name>.jsonl against the hub
// on <name>.yaml and compares its answers with <name>.golden.jsonl byte for
// byte: each line holds the request, then the result or error exactly as
// the hub wrote it, then the notifications it sent, whole. Definitions,
// results and errors pass through with no field lost and no byte changed:
// keys stay in the upstream's order, <, > and & stay unescaped, numbers
// keep their digits. go test -update rewrites the golden files; read the
// diff before committing it.
func TestGoldenTranscripts(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"flat", "dynamic"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(repoDir, "testdata", "golden")
			c := startGoldenHub(t, name)
			var got bytes.Buffer
			for _, ex := range readTranscript(t, filepath.Join(dir, name+".jsonl")) {
				resp, notes := c.roundTrip(ex.Method, ex.Params, ex.Notes)
				got.Write(goldenLine(t, ex, resp, notes))
				got.WriteByte('\n')
			}
			goldenPath := filepath.Join(dir, name+".golden.jsonl")
			if *update {
				if err := os.WriteFile(goldenPath, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatal(err)
			}
			gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
			if len(gotLines) != len(wantLines) {
				t.Fatalf("golden has %d lines, the transcript gave %d: run go test -update", len(wantLines), len(gotLines))
			}
			for i := range gotLines {
				if gotLines[i] != wantLines[i] {
					t.Errorf("exchange %d differs:\n got: %s\nwant: %s", i+1, gotLines[i], wantLines[i])
				}
			}
		})
	}
}

// TestGoldenPassThrough checks what the golden files only record: the bytes
// the fake upstream writes are the bytes the client gets, measured against
// the fake itself rather than against a file -update could rewrite.
func TestGoldenPassThrough(t *testing.T) {
	t.Parallel()
	fake := startRaw(t, nil, fakeBin, "-exact")
	var def json.RawMessage
	for _, tool := range rawList(t, fake, "tools") {
		if string(jsonrpc.Field(tool, "name")) == `"exact"` {
			def = tool
		}
	}
	if def == nil {
		t.Fatal("the fake offers no exact tool")
	}
	result := jsonrpc.Field(fake.call("tools/call", json.RawMessage(`{"name":"exact","arguments":{}}`)), "result")
	if !bytes.Contains(result, []byte(`<b>bold</b> & \"quoted\", \u003cescaped`)) || !bytes.Contains(def, []byte(`1e2`)) {
		t.Fatalf("the fake's exact tool is not what this test expects:\n%s\n%s", def, result)
	}
	// 2026-07-28 adds resultType: spliced in after the last field.
	decorated := append(bytes.Clone(result[:len(result)-1]), `,"resultType":"complete"}`...)
	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

	t.Run("flat", func(t *testing.T) {
		c := startGoldenHub(t, "flat")
		want := bytes.Replace(def, []byte(`"name":"exact"`), []byte(`"name":"fake__exact"`), 1)
		var got json.RawMessage
		for _, tool := range rawTools(t, c) {
			if string(jsonrpc.Field(tool, "name")) == `"fake__exact"` {
				got = tool
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tools/list definition:\n got: %s\nwant: %s", got, want)
		}
		res := jsonrpc.Field(c.call("tools/call", json.RawMessage(`{"name":"fake__exact","arguments":{}}`)), "result")
		if !bytes.Equal(res, result) {
			t.Errorf("tools/call result:\n got: %s\nwant: %s", res, result)
		}
		res = jsonrpc.Field(c.call("tools/call", json.RawMessage(`{"name":"fake__exact","arguments":{},`+modernMeta+`}`)), "result")
		if !bytes.Equal(res, decorated) {
			t.Errorf("2026-07-28 tools/call result:\n got: %s\nwant: %s", res, decorated)
		}
	})
	t.Run("dynamic", func(t *testing.T) {
		c := startGoldenHub(t, "dynamic")
		res := jsonrpc.Field(c.call("tools/call", json.RawMessage(`{"name":"call_dynamic_tool","arguments":{"group":"fake","name":"exact","args":{}}}`)), "result")
		if !bytes.Equal(res, result) {
			t.Errorf("call_dynamic_tool result:\n got: %s\nwant: %s", res, result)
		}
		res = jsonrpc.Field(c.call("tools/call", json.RawMessage(`{"name":"get_dynamic_tools","arguments":{"group":"fake"}}`)), "result")
		var r struct {
			Content []struct{ Text string } `json:"content"`
		}
		mustUnmarshal(t, res, &r)
		if len(r.Content) != 1 {
			t.Fatalf("get_dynamic_tools: %s", res)
		}
		// The LLM reads this JSON as text: the upstream's bytes, not
		// escapes the hub added.
		text := r.Content[0].Text
		for _, want := range []string{
			`"name":"exact","description":` + string(jsonrpc.Field(def, "description")),
			`"inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e2,"description":"a <number> & \u003cmore\u003e"}}}`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("get_dynamic_tools text lacks %s:\n%s", want, text)
			}
		}
	})
}

// startGoldenHub starts the hub on testdata/golden/<name>.yaml over stdio
// and waits until the fake's tools are there.
func startGoldenHub(t *testing.T, name string) *rawConn {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(repoDir, "testdata", "golden", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(cfg), "${FAKE}", fakeBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startRaw(t, []string{"DYNAMIC_MCP_HOME=" + t.TempDir()}, hubBin, "serve", "-c", path, "--log-level", "debug")
	c.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"dynamic-mcp-golden","version":"1"}}`))
	c.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	await.Costly(t, 30*time.Second, "the fake's tools", func() bool {
		tools := rawTools(t, c)
		if name == "flat" {
			return len(tools) >= fakeTools+exactTools
		}
		for _, tool := range tools {
			var get struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties struct {
						Group struct {
							Enum []string `json:"enum"`
						} `json:"group"`
					} `json:"properties"`
				} `json:"inputSchema"`
			}
			mustUnmarshal(t, tool, &get)
			if get.Name == "get_dynamic_tools" {
				return reflect.DeepEqual(get.InputSchema.Properties.Group.Enum, []string{"fake"})
			}
		}
		return false
	})
	return c
}

// goldenLine is one line of a golden file: the request, then the answer's
// result or error and the notifications as the hub wrote them.
func goldenLine(t *testing.T, ex exchange, resp []byte, notes [][]byte) []byte {
	t.Helper()
	method, _ := jsonrpc.Marshal(ex.Method)
	b := append([]byte(`{"method":`), method...)
	if len(ex.Params) > 0 {
		b = append(append(b, `,"params":`...), ex.Params...)
	}
	switch {
	case jsonrpc.Field(resp, "result") != nil:
		b = append(append(b, `,"result":`...), jsonrpc.Field(resp, "result")...)
	case jsonrpc.Field(resp, "error") != nil:
		b = append(append(b, `,"error":`...), jsonrpc.Field(resp, "error")...)
	default:
		t.Fatalf("%s: an answer with neither result nor error: %s", ex.Method, resp)
	}
	if len(notes) > 0 {
		b = append(b, `,"notifications":[`...)
		b = append(b, bytes.Join(notes, []byte(","))...)
		b = append(b, ']')
	}
	return append(b, '}')
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

// rawConn is a JSON-RPC client over a process's stdin and stdout that
// keeps every line it reads as bytes: mcp-go's client transports decode
// notifications into structs and would hide what the hub wrote.
type rawConn struct {
	t      testing.TB
	stdin  io.WriteCloser
	lines  chan []byte // closed when stdout ends
	nextID int
}

// startRaw starts argv and connects a rawConn to it. The process is
// stopped by closing its stdin when the test ends.
func startRaw(t testing.TB, env []string, argv ...string) *rawConn {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	c := &rawConn{t: t, stdin: stdin, lines: make(chan []byte, 64)}
	go func() { // exits when stdout ends
		defer close(c.lines)
		r := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
				c.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		timeout := time.After(15 * time.Second)
	drain:
		for {
			select {
			case _, ok := <-c.lines:
				if !ok {
					break drain
				}
			case <-timeout:
				_ = cmd.Process.Kill()
				timeout = nil
			}
		}
		_ = cmd.Wait()
		if raceChecked(argv[0]) && strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector found a data race in %s", filepath.Base(argv[0]))
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", filepath.Base(argv[0]), stderr.String())
		}
	})
	return c
}

func (c *rawConn) write(line []byte) {
	c.t.Helper()
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		c.t.Fatalf("write %s: %v", line, err)
	}
}

// roundTrip sends a request and returns its answer, whole, with the
// notifications that came until the answer and notes of them were there.
// A request from the other side is refused: this client declared no
// capabilities.
func (c *rawConn) roundTrip(method string, params json.RawMessage, notes int) (resp []byte, got [][]byte) {
	c.t.Helper()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	m, _ := jsonrpc.Marshal(method)
	req := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":` + string(m))
	if len(params) > 0 {
		req = append(append(req, `,"params":`...), params...)
	}
	c.write(append(req, '}'))
	timeout := time.After(30 * time.Second)
	for resp == nil || len(got) < notes {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: the connection closed (answer %q, %d of %d notifications)", method, resp, len(got), notes)
			}
			lineID, lineMethod := jsonrpc.Field(line, "id"), jsonrpc.Field(line, "method")
			switch {
			case lineMethod != nil && lineID != nil:
				c.write([]byte(`{"jsonrpc":"2.0","id":` + string(lineID) + `,"error":{"code":-32601,"message":"the test client does not support this"}}`))
			case lineMethod != nil:
				if !bytes.HasSuffix(lineMethod, []byte(`list_changed"`)) {
					got = append(got, line)
				}
			case string(lineID) == id:
				resp = line
			default:
				c.t.Logf("%s: a line that answers nothing asked: %s", method, line)
			}
		case <-timeout:
			c.t.Fatalf("%s: no answer in 30s (answer %q, %d of %d notifications)", method, resp, len(got), notes)
		}
	}
	return resp, got
}

// call sends a request that must succeed and returns the whole answer.
func (c *rawConn) call(method string, params json.RawMessage) []byte {
	c.t.Helper()
	resp, _ := c.roundTrip(method, params, 0)
	if e := jsonrpc.Field(resp, "error"); e != nil {
		c.t.Fatalf("%s %s: error %s", method, params, e)
	}
	return resp
}

// rawList reads every page of a list, each entry as the bytes the server
// wrote.
func rawList(t testing.TB, c *rawConn, field string) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	var params json.RawMessage
	for {
		result := jsonrpc.Field(c.call(field+"/list", params), "result")
		var page []json.RawMessage // json.RawMessage keeps each entry's bytes
		mustUnmarshal(t, jsonrpc.Field(result, field), &page)
		all = append(all, page...)
		cursor := jsonrpc.Field(result, "nextCursor")
		if cursor == nil {
			return all
		}
		params = json.RawMessage(`{"cursor":` + string(cursor) + `}`)
	}
}

// rawTools is the hub's tools/list, each definition as the hub wrote it.
func rawTools(t testing.TB, c *rawConn) []json.RawMessage {
	t.Helper()
	return rawList(t, c, "tools")
}
