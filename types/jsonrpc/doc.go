// Package jsonrpc holds the framing rules dynamic-mcp applies to every
// message on both of its sides (a size limit, a nesting limit, and no key
// given twice in an object, not even in a different case: a message that
// breaks one is refused, never guessed at) and the one connection type
// that carries a conversation: Conn, over a Stream of whole messages
// (NewLineStream for newline-delimited stdio).
package jsonrpc

// Limits of a message, on both sides of the hub.
const (
	// DefaultMaxMessageSize is the largest message read (10 MiB); the
	// settings.max_message_size key changes it.
	DefaultMaxMessageSize = 10 << 20
	// MaxDepth is the deepest nesting of objects and arrays accepted.
	MaxDepth = 128
)
