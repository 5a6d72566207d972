// Command dump writes the tools/list of one MCP server started over stdio
// to stdout, for the search benchmark's corpus in testdata/search: every
// page, each tool as the server sent it (keys in its order, its escapes
// kept; only the whitespace between tokens dropped), one tool a line.
//
//	go run ./testdata/search/dump -- node_modules/.bin/mcp-server-memory > testdata/search/memory.json
//
// It speaks raw JSON-RPC (initialize, notifications/initialized, tools/list
// until no nextCursor) so that no library drops or reorders a field.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: dump [-timeout 60s] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := run(flag.Args(), *timeout, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

func run(args []string, timeout time.Duration, out io.Writer) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", args[0], err)
	}
	defer func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()

	r := bufio.NewReaderSize(stdout, 1<<20)
	id := 0
	request := func(method string, params any) (json.RawMessage, error) {
		id++
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := in.Write(append(msg, '\n')); err != nil {
			return nil, fmt.Errorf("write %s: %w", method, err)
		}
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("read the answer to %s: %w", method, err)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.Method != "" || string(m.ID) != fmt.Sprint(id) {
				continue // a log line, a notification or a request of the server's
			}
			if m.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, m.Error)
			}
			return m.Result, nil
		}
	}
	if _, err := request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "dynamic-mcp-corpus-dump", "version": "1"}}); err != nil {
		return err
	}
	if _, err := in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		return err
	}
	var tools []json.RawMessage
	var cursor string
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := request("tools/list", params)
		if err != nil {
			return err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, page.Tools...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(tools) == 0 {
		return errors.New("the server lists no tools")
	}
	var b bytes.Buffer
	b.WriteString("{\"tools\":[\n")
	for i, t := range tools {
		if i > 0 {
			b.WriteString(",\n")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, t); err != nil {
			return err
		}
		b.Write(compact.Bytes())
	}
	b.WriteString("\n]}\n")
	_, err = out.Write(b.Bytes())
	return err
}
