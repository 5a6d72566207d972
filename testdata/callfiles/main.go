// Command callfiles makes flat tools/calls from a stdio client through an
// in-process hub to a stdio upstream, and writes the coverage counters of
// each measured call alone to the directory it is given: the files a call
// enters are those whose counters moved. Built with -cover by server's
// TestOneCallEntersFewFiles; of no use otherwise.
//
// Two measures, three calls each (subdirectories named by call id):
// "back" counts a whole call, from the client's request to its answer;
// "down" counts from the client's request until the upstream has read it
// (the upstream, this program started with -upstream, holds the call
// until the counters are written), the path the hub takes down.
//
// Usage: callfiles DIR [default]: the audit trail off, or (default) as
// the default config has it: on, written to state_dir's audit.jsonl.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/coverage"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-upstream" {
		serveUpstream(os.Args[2])
		return
	}
	audit := "audit: {path: \"off\"}\n"
	if len(os.Args) > 2 && os.Args[2] == "default" {
		audit = "" // the default: the trail on, in state_dir
	}
	if err := run(os.Args[1], audit); err != nil {
		fmt.Fprintln(os.Stderr, "callfiles:", err)
		os.Exit(1)
	}
}

func run(dir, audit string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	held := filepath.Join(dir, "held")
	if err := os.Mkdir(held, 0o755); err != nil {
		return err
	}
	yaml := fmt.Sprintf("mode: flat\nstate_dir: %q\n%sgroups:\n  f:\n    description: fake\n    command: %q\n    args: [\"-upstream\", %q]\n",
		filepath.Join(dir, "state"), audit, self, held)
	cfg, err := config.Loader{Secrets: secrets.Source{}}.Parse("callfiles.yaml", strings.NewReader(yaml))
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := upstream.New(cfg, logger)
	h, err := server.New(cfg, mgr, logger)
	if err != nil {
		return err
	}
	h.Run()
	mgr.Start(context.Background())
	defer func() { h.Close(); mgr.Close() }()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go h.ServeStdioWith(context.Background(), inR, outW, server.StdioOptions{})
	out := bufio.NewReader(outR)
	send := func(msg string) error {
		_, err := io.WriteString(inW, msg+"\n")
		return err
	}
	answer := func(id string) (string, error) {
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return "", err
			}
			if strings.Contains(line, `"id":`+id+`,`) && !strings.Contains(line, `"method"`) {
				return line, nil
			}
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); err != nil {
		return err
	}
	if _, err := answer("0"); err != nil {
		return err
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	callMsg := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"` + text + `"}}}`
	}
	// answered counts the calls answered; with the trail on, a measure
	// starts once the trail has written each one's record (settled), so
	// that its writer's work for an earlier call is not counted as this
	// one's.
	answered := 0
	settled := func() error {
		if audit != "" {
			return nil // the trail off
		}
		return waitForRecords(filepath.Join(dir, "state", "audit.jsonl"), answered)
	}
	call := func(id string) error {
		if err := send(callMsg(id, "x")); err != nil {
			return err
		}
		line, err := answer(id)
		if err == nil && !strings.Contains(line, `"result"`) {
			err = fmt.Errorf("call %s: %s", id, line)
		}
		answered++
		return err
	}
	// The first calls wait for the upstream, compile the tool's schema
	// and warm what is made once; the measured calls are like any later.
	for _, id := range []string{"1", "2"} {
		if err := call(id); err != nil {
			return err
		}
	}
	// Three calls of each measure: the files all three enter are the
	// call's; one entered by work in the background (a list saved, a
	// timer) is seldom in all three.
	for _, id := range []string{"3", "4", "5"} {
		if err := settled(); err != nil {
			return err
		}
		if err := measure(filepath.Join(dir, "back", id), func() error { return call(id) }); err != nil {
			return err
		}
	}
	for _, id := range []string{"6", "7", "8"} {
		mark := filepath.Join(held, id)
		if err := settled(); err != nil {
			return err
		}
		if err := measure(filepath.Join(dir, "down", id), func() error {
			if err := send(callMsg(id, "hold:"+id)); err != nil {
				return err
			}
			return waitFor(mark, true)
		}); err != nil {
			return err
		}
		os.Remove(mark) // the upstream answers now
		if _, err := answer(id); err != nil {
			return err
		}
		answered++
	}
	return nil
}

// waitForRecords waits until the audit trail at path holds n records of
// tools/call, for a minute at most: a deadline for a hung program, not a
// timing.
func waitForRecords(path string, n int) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte(`"method":"tools/call"`)) >= n {
			return nil
		}
	}
	return fmt.Errorf("%s: %d records of tools/call not written within a minute", path, n)
}

// measure writes to dir the counters of what do does alone.
func measure(dir string, do func() error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	if err := coverage.WriteCountersDir(dir); err != nil {
		return err
	}
	return coverage.WriteMetaDir(dir)
}

// waitFor waits until path exists (or, with exists false, is gone), for a
// minute at most: a deadline for a hung program, not a timing.
func waitFor(path string, exists bool) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); (err == nil) == exists {
			return nil
		}
	}
	return fmt.Errorf("%s: not there within a minute", path)
}

// serveUpstream is the upstream: MCP over stdin and stdout with one tool,
// echo. A call whose text is "hold:NAME" creates held/NAME once it has read
// the call, and answers once that file is gone.
func serveUpstream(held string) {
	var mu sync.Mutex
	reply := func(id json.RawMessage, result string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,%s}`+"\n", id, result)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Arguments       struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil || m.Method == "" {
			continue // a notification, or an answer: nothing to say
		}
		switch m.Method {
		case "initialize":
			v, _ := json.Marshal(m.Params.ProtocolVersion)
			reply(m.ID, `"result":{"protocolVersion":`+string(v)+`,"capabilities":{"tools":{}},"serverInfo":{"name":"callfiles","version":"1"}}`)
		case "tools/list":
			reply(m.ID, `"result":{"tools":[{"name":"echo","description":"Echoes text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`)
		case "tools/call":
			go func(id json.RawMessage, text string) {
				if name, ok := strings.CutPrefix(text, "hold:"); ok {
					mark := filepath.Join(held, name)
					os.WriteFile(mark, nil, 0o644)
					waitFor(mark, false)
				}
				t, _ := json.Marshal(text)
				reply(id, `"result":{"content":[{"type":"text","text":`+string(t)+`}]}`)
			}(m.ID, m.Params.Arguments.Text)
		case "ping":
			reply(m.ID, `"result":{}`)
		default:
			reply(m.ID, `"error":{"code":-32601,"message":"Method not found"}`)
		}
	}
}
