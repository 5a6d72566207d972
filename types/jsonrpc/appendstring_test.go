package jsonrpc

import (
	"bytes"
	"testing"
)

// AppendString writes what Marshal writes, plain or not, and a plain
// string without allocating.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "echo", "tools/call", "a-b_c.d$e/f", `say "hi"`, `a\b`, "<b>&", "é", "\u2028", "\x00\n\t", "\xff"} {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
	b := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { b = AppendString(b[:0], "get_weather") }); n != 0 {
		t.Errorf("%v allocations for a plain string", n)
	}
}
