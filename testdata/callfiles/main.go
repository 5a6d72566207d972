// Command callfiles makes one flat tools/call from a stdio client through
// an in-process hub to a stdio upstream, and writes the coverage counters
// of that call alone to the directory it is given (three times, in
// subdirectories 3, 4 and 5): the files the call
// enters are those whose counters moved. Built with -cover by
// server's TestOneCallEntersFewFiles; of no use otherwise.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/coverage"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

func main() {
	fakeupstream.Run() // started as the upstream: serve, then exit
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "callfiles:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	yaml := fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\ngroups:\n  f:\n    description: fake\n    command: %q\n",
		os.TempDir(), fakeupstream.Command())
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
	ask := func(id, msg string) (string, error) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			return "", err
		}
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
	if _, err := ask("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); err != nil {
		return err
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	call := func(id string) error {
		line, err := ask(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"x"}}}`)
		if err == nil && !strings.Contains(line, `"result"`) {
			err = fmt.Errorf("call %s: %s", id, line)
		}
		return err
	}
	// The first calls wait for the upstream, compile the tool's schema
	// and warm what is made once; the measured call is one like any later.
	for _, id := range []string{"1", "2"} {
		if err := call(id); err != nil {
			return err
		}
	}
	// Three calls measured apart: the files all three enter are the
	// call's; one entered by work in the background (a list saved, a
	// timer) is seldom in all three.
	for _, id := range []string{"3", "4", "5"} {
		sub := filepath.Join(dir, id)
		if err := os.Mkdir(sub, 0o755); err != nil {
			return err
		}
		if err := coverage.ClearCounters(); err != nil {
			return err
		}
		if err := call(id); err != nil {
			return err
		}
		if err := coverage.WriteCountersDir(sub); err != nil {
			return err
		}
		if err := coverage.WriteMetaDir(sub); err != nil {
			return err
		}
	}
	return nil
}
