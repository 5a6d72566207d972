package jsonrpc

import (
	"io"
	"strings"
	"testing"
)

func TestReadLines(t *testing.T) {
	big := strings.Repeat("a", 5<<20)
	huge := `{"jsonrpc":"2.0","id":7,"result":"` + strings.Repeat("b", 2000) + `"}`
	in := strings.NewReader("first\n  \n" + huge + "\n" + big + "\nlast")
	var got []string
	var sizes []int
	var heads []string
	err := ReadLines(in, 1000, func(l []byte) { got = append(got, string(l)) }, func(n int, head, _ []byte) {
		sizes = append(sizes, n)
		heads = append(heads, string(head))
	})
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "last" {
		t.Errorf("lines %q", got)
	}
	if len(sizes) != 2 || sizes[0] != len(huge)+1 || sizes[1] != len(big)+1 {
		t.Errorf("too large: %v", sizes)
	}
	if id := IDOf([]byte(heads[0])); string(id) != "7" {
		t.Errorf("id of an over-long reply = %s", id)
	}
	if len(heads[1]) > headSize {
		t.Errorf("kept %d bytes of an over-long line", len(heads[1]))
	}
	// Within the limit a single 5 MiB line passes whole.
	got = nil
	if err := ReadLines(strings.NewReader(big+"\n"), DefaultMaxMessageSize, func(l []byte) { got = append(got, string(l)) }, func(int, []byte, []byte) { t.Error("5 MiB refused") }); err != io.EOF {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != len(big) {
		t.Errorf("5 MiB line arrived as %d lines", len(got))
	}
}

func TestIDOf(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":"a-1","result":{}}`: `"a-1"`,
		`{"result":{"x":[1,2]},"id":3}`:            `3`,
		`{"jsonrpc":"2.0","id":12,"result":"trunc`: `12`,
		`{"jsonrpc":"2.0","result":"trunc`:         ``,
		`[1]`:                                      ``,
		`garbage`:                                  ``,
	} {
		if got := string(IDOf([]byte(in))); got != want {
			t.Errorf("IDOf(%s) = %q, want %q", in, got, want)
		}
	}
}

func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		err := ReadLines(strings.NewReader(string(in)), max, func(l []byte) {
			if len(l) > max {
				t.Fatalf("handed a line of %d bytes over the %d limit", len(l), max)
			}
		}, func(n int, head, tail []byte) {
			if len(tail) > tailSize {
				t.Fatalf("kept %d bytes of tail", len(tail))
			}
			if n <= max || len(head) > headSize {
				t.Fatalf("tooLarge(%d, %d bytes) with limit %d", n, len(head), max)
			}
		})
		if err != io.EOF {
			t.Fatal(err)
		}
	})
}

func TestIDOfTail(t *testing.T) {
	for in, want := range map[string]string{
		`...","jsonrpc":"2.0","id":42}`:   `42`,
		`..."} , "id" : "req-7" }` + "\n": `"req-7"`,
		`...,"id":-3}`:                    `-3`,
		`...{"id":3}}`:                    ``, // nested
		`...:{"x":1,"id":3}}`:             ``,
		`...,"id":"a\"b"}`:                ``, // escapes: not trusted
		`...,"xid":3}`:                    ``,
		`...,"id":3]`:                     ``,
		`...,"id":}`:                      ``,
		`...,"id":true}`:                  ``,
		`...tx"id":3}`:                    ``,
	} {
		if got := string(IDOfTail([]byte(in))); got != want {
			t.Errorf("IDOfTail(%s) = %q, want %q", in, got, want)
		}
	}
}
