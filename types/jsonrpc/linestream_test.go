package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// readAll reads s to its end: the lines, the lines too large, and the
// error it ended with.
func readAll(s Stream) (lines []string, tooLarge []*TooLargeError, err error) {
	for {
		msg, err := s.Read()
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			tooLarge = append(tooLarge, tl)
		case err != nil:
			return lines, tooLarge, err
		default:
			lines = append(lines, string(msg))
		}
	}
}

func TestLineStreamRead(t *testing.T) {
	big := strings.Repeat("a", 5<<20)
	huge := `{"jsonrpc":"2.0","id":7,"result":"` + strings.Repeat("b", 2000) + `"}`
	in := strings.NewReader("first\n  \n" + huge + "\n" + big + "\nlast")
	got, tooLarge, err := readAll(NewLineStream(in, io.Discard, 1000))
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "last" {
		t.Errorf("lines %q", got)
	}
	if len(tooLarge) != 2 || tooLarge[0].Size != len(huge)+1 || tooLarge[1].Size != len(big)+1 || tooLarge[0].Limit != 1000 {
		t.Fatalf("too large: %v", tooLarge)
	}
	if id := IDOf(tooLarge[0].Head); string(id) != "7" {
		t.Errorf("id of an over-long reply = %s", id)
	}
	if len(tooLarge[1].Head) > headSize {
		t.Errorf("kept %d bytes of an over-long line", len(tooLarge[1].Head))
	}
	// Within the limit a single 5 MiB line passes whole.
	got, tooLarge, err = readAll(NewLineStream(strings.NewReader(big+"\n"), io.Discard, 0))
	if err != io.EOF || len(tooLarge) != 0 {
		t.Fatal(err, tooLarge)
	}
	if len(got) != 1 || len(got[0]) != len(big) {
		t.Errorf("5 MiB line arrived as %d lines", len(got))
	}
}

// Write adds the newline; WriteBatch writes several messages in one
// write; a write the peer does not take within ctx times out, and the
// stream is not written again.
func TestLineStreamWrite(t *testing.T) {
	var w countingWriter
	s := NewLineStream(strings.NewReader(""), &w, 0)
	if err := s.Write(t.Context(), []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.(BatchWriter).WriteBatch(t.Context(), [][]byte{[]byte("b"), []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if w.String() != "{\"a\":1}\nb\nc\n" || w.writes != 2 {
		t.Errorf("wrote %q in %d writes", w.String(), w.writes)
	}
	// A large message is written from its own bytes, between the small
	// ones before it and its newline with those after it.
	w.Reset()
	w.writes = 0
	big := []byte(strings.Repeat("x", copyMax+1))
	if err := s.(BatchWriter).WriteBatch(t.Context(), [][]byte{[]byte("a"), big, []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if w.String() != "a\n"+string(big)+"\nb\n" || w.writes != 3 {
		t.Errorf("wrote %d bytes in %d writes", w.Len(), w.writes)
	}
	for _, name := range []string{"deadline", "close", "cancel"} {
		t.Run(name, func(t *testing.T) {
			var s Stream
			if name != "close" {
				a, b := net.Pipe() // never read
				defer b.Close()
				s = NewLineStream(a, a, 0)
			} else {
				pr, pw := io.Pipe() // never read, no deadlines
				defer pr.Close()
				s = NewLineStream(strings.NewReader(""), pw, 0)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			if name == "cancel" { // ended long before its deadline
				ctx, cancel = context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			if err := s.Write(ctx, []byte("x")); !errors.Is(err, ErrWriteTimeout) {
				t.Errorf("write to a peer that does not read: %v", err)
			}
			if err := s.Write(t.Context(), []byte("x")); err == nil {
				t.Error("a stream whose write timed out was written again")
			}
		})
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(b)
}

func TestIDOf(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":"a-1","result":{}}`: `"a-1"`,
		`{"result":{"x":[1,2]},"id":3}`:            `3`,
		`{"jsonrpc":"2.0","id":12,"result":"trunc`: `12`,
		`{"jsonrpc":"2.0","result":"trunc`:         ``,
		// Cut within or right after a number id: its digits may go on
		// ("id":12 cut to "id":1 would name another request).
		`{"jsonrpc":"2.0","id":1`:   ``,
		`{"jsonrpc":"2.0","id":12 `: `12`,
		`{"jsonrpc":"2.0","id":12,`: `12`,
		`{"jsonrpc":"2.0","id":"ab`: ``,
		`{"jsonrpc":"2.0","id":"a"`: `"a"`,
		`[1]`:                       ``,
		`garbage`:                   ``,
	} {
		if got := string(IDOf([]byte(in))); got != want {
			t.Errorf("IDOf(%s) = %q, want %q", in, got, want)
		}
	}
}

func FuzzLineStream(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		lines, tooLarge, err := readAll(NewLineStream(strings.NewReader(string(in)), io.Discard, max))
		for _, l := range lines {
			if len(l) > max || len(l) == 0 {
				t.Fatalf("read a line of %d bytes with the %d limit", len(l), max)
			}
		}
		for _, e := range tooLarge {
			if len(e.Tail) > tailSize {
				t.Fatalf("kept %d bytes of tail", len(e.Tail))
			}
			if e.Size <= max || len(e.Head) > headSize {
				t.Fatalf("too large (%d, %d bytes) with limit %d", e.Size, len(e.Head), max)
			}
		}
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
