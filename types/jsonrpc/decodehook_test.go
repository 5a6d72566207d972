package jsonrpc

import (
	"bytes"
	"testing"
)

// A hook set while another is puts that one back when restored, not
// none. Only this test's message is counted: the hooks see every
// goroutine's.
func TestDecodeHookRestoresTheOneBefore(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":"decode-hook-restores","method":"ping"}`)
	var outer, inner int
	count := func(n *int) func([]byte) {
		return func(b []byte) {
			if bytes.Equal(b, msg) {
				*n++
			}
		}
	}
	restoreOuter := DecodeHook(count(&outer))
	defer restoreOuter()
	restoreInner := DecodeHook(count(&inner))
	if _, err := Decode(msg); err != nil {
		t.Fatal(err)
	}
	restoreInner()
	if _, err := Decode(msg); err != nil {
		t.Fatal(err)
	}
	if outer != 1 || inner != 1 {
		t.Errorf("the outer hook saw %d decodes, the inner %d; want 1 each", outer, inner)
	}
}
