package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// headSize is how much of an over-long line is kept, to find its id.
const headSize = 64 << 10

// ReadLines calls handle with each line of r (without surrounding space)
// until r ends, and returns the read error (io.EOF at a clean end). A line
// over max bytes is not buffered whole: it is discarded and reported to
// tooLarge with its size and first bytes, so the reader's memory stays
// bounded whatever the peer sends. handle may keep the slice.
func ReadLines(r io.Reader, max int, handle func([]byte), tooLarge func(size int, head []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	size := 0
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if size <= max || len(buf) < headSize {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if size > max {
			tooLarge(size, buf[:min(len(buf), headSize)])
		} else if line := bytes.TrimSpace(buf); len(line) > 0 {
			handle(line)
		}
		buf, size = nil, 0
		if err != nil {
			return err
		}
	}
}

// IDOf finds the top-level "id" of a message, which may be cut short or
// broken further on, so that a peer can still be answered about it. It
// returns nil when no id comes before the message ends or breaks.
func IDOf(msg []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(msg))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			return v
		}
	}
	return nil
}
