package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// refuseWait bounds how long serve, failing before it serves, waits for
// the client's first request to answer it: a client sends it as soon as
// it has started the server.
const refuseWait = 3 * time.Second

// maxRefusedLine bounds what refuseClient reads of that request.
const maxRefusedLine = 1 << 20

// refuseClient answers the first request of a client on stdio (its
// initialize) with err, the reason serve cannot serve (a config that
// cannot be read, a flag it does not know), as a JSON-RPC error, and
// returns err: the client shows the reason, where it would otherwise wait
// for an answer that never comes and say only that the server closed.
// Nothing is read when stdio is not a client's (onStdio false: --http,
// --hub) or is a terminal (a person, who reads stderr). A read of stdin
// cannot be cancelled: one still waiting after refuseWait is left to the
// process's exit, which follows. A stop (SIGTERM, Ctrl-C: ctx ends) ends
// the wait at once.
func refuseClient(ctx context.Context, stdin io.Reader, stdout io.Writer, err error, onStdio bool) error {
	if !onStdio || isTerminal(stdin) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	first := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(io.LimitReader(stdin, maxRefusedLine)).ReadBytes('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if m, derr := jsonrpc.Decode(line); derr == nil && m.IsRequest() {
			msg := jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "dynamic-mcp: "+err.Error()))
			_, _ = stdout.Write(append(msg, '\n'))
		}
	case <-time.After(refuseWait):
	case <-ctx.Done():
	}
	return err
}
