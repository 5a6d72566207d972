// Command callfiles makes flat tools/calls from a stdio client through an
// in-process hub to a stdio upstream, and writes the coverage counters of
// each measured call alone to the directory it is given: the files a call
// enters are those whose counters moved. Built with -cover by server's
// TestOneCallEntersFewFiles; of no use otherwise.
//
// Two measures, three calls each (subdirectories 1, 2 and 3): "back"
// counts a whole call, from the client's request to its answer;
// "down" counts from the client's request until the upstream has read it
// (the upstream, this program started with -upstream, holds the call
// until the counters are written), the path the hub takes down.
//
// Usage: callfiles DIR [default]: the audit trail off, or (default) as
// the default config has it: on, written to state_dir's audit.jsonl. With
// the trail on, what a measure counts is the goroutines that carry the
// call: the trail's writer, a goroutine of its own that the call's record
// wakes, writes it to disk off the call's path, and a measure in which it
// ran is taken again (see carried).
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
	"runtime"
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
	// One P: a goroutine the call wakes and does not wait for (the trail's
	// writer) runs once the call's goroutines wait, seldom before the
	// counters are written, and fewer measures are taken again. Which of
	// the hub's files a call enters does not depend on it.
	runtime.GOMAXPROCS(1)
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
	// answered counts the calls answered; with the trail on, a measure
	// starts once the trail has written each one's record and its writer
	// is idle again (settled), so that its work for an earlier call is
	// not counted as this one's.
	answered := 0
	var idle string // the trail's writer's frames, parked idle
	settled := func() error {
		if audit != "" {
			return nil // the trail off
		}
		if err := waitForRecords(filepath.Join(dir, "state", "audit.jsonl"), answered); err != nil {
			return err
		}
		var err error
		idle, err = writerIdle()
		return err
	}
	// carried says whether a measure was the call's alone: with the trail
	// on, the call hands its record to the trail's writer, a goroutine of
	// its own that the hand-off wakes, and that goroutine is not the
	// call's path: a measure in which it ran (it is no longer where it
	// was woken, parked idle) is taken again.
	carried := func() bool {
		if audit != "" {
			return true
		}
		status, frames, _ := trailWriter()
		return status == "runnable" && frames == idle
	}
	callMsg := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"` + text + `"}}}`
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
	// Three measures of each kind: the files all three enter are the
	// call's; one entered by work in the background (a list saved, a
	// timer) is seldom in all three. Each call has an id of its own; a
	// measure the trail's writer ran in is taken again with the next.
	next, again := 2, 0
	newID := func() string { next++; return fmt.Sprint(next) }
	for i := 1; i <= 3; {
		if err := settled(); err != nil {
			return err
		}
		id, out := newID(), filepath.Join(dir, "back", fmt.Sprint(i))
		if err := measure(out, func() error { return call(id) }); err != nil {
			return err
		}
		if !carried() {
			if again++; again > 1000 {
				return fmt.Errorf("the trail's writer ran in %d measures of a call in a row", again)
			}
			os.RemoveAll(out)
			continue
		}
		i++
	}
	for i := 1; i <= 3; i++ {
		// Down, the call is held upstream and hands the trail nothing.
		if err := settled(); err != nil {
			return err
		}
		id := newID()
		mark := filepath.Join(held, id)
		if err := measure(filepath.Join(dir, "down", fmt.Sprint(i)), func() error {
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
	fmt.Printf("measures taken again, the trail's writer having run in them: %d\n", again)
	return nil
}

// trailWriter is the audit trail's writer goroutine (audit.Trail's run)
// as runtime.Stack shows it: its status (select, runnable, ...) and its
// frames.
func trailWriter() (status, frames string, ok bool) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, frames, _ := strings.Cut(g, "\n")
		top := frames // its first frame of the program's (GOTRACEBACK=system shows the runtime's)
		for strings.HasPrefix(top, "runtime.") {
			_, top, _ = strings.Cut(top, "\n\t") // the frame's file and line
			_, top, _ = strings.Cut(top, "\n")
		}
		if strings.HasPrefix(top, "github.com/dynamic-mcp/dynamic-mcp/server/audit.(*Trail).run(") {
			status, _, _ = strings.Cut(head[strings.Index(head, "[")+1:], "]")
			status, _, _ = strings.Cut(status, ",") // "select, 2 minutes"
			return status, frames, true
		}
	}
	return "", "", false
}

// writerIdle waits until the trail's writer is parked in its loop's
// select, waiting for a line (nothing of its own left to do), and returns
// its frames then; for a minute at most: a deadline for a hung program,
// not a timing.
func writerIdle() (string, error) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if status, frames, _ := trailWriter(); status == "select" {
			return frames, nil
		}
	}
	return "", fmt.Errorf("the audit trail's writer not idle within a minute")
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
