package jsonrpc

import "sync/atomic"

// decodeHook is told of each message Decode is handed, when a test set
// one (DecodeHook).
var decodeHook atomic.Pointer[func([]byte)]

// DecodeHook has f told of every message Decode is handed, from every
// goroutine, until restore is called: so that a test counts how often
// one message is decoded, wherever (an HTTP face decodes a POST's body
// once, and the session's Conn takes that decoding: a Conn that decoded
// it again would be counted too). For tests: a program sets none, and
// Decode pays one atomic load.
func DecodeHook(f func(msg []byte)) (restore func()) {
	decodeHook.Store(&f)
	return func() { decodeHook.Store(nil) }
}
