// Package transport holds how the hub reaches upstream servers below the
// JSON-RPC connection: supervision of stdio child processes (process
// groups, stderr into the logger, the close ladder), and the message
// streams of remote servers on net/http (Streamable HTTP and legacy SSE,
// one SSE reader, the size limits), each a jsonrpc.Stream that a
// jsonrpc.Conn runs over. The stdio stream is jsonrpc's line stream.
package transport
