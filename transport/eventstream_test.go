package transport

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// refEvents parses an event stream as the SSE standard does, for lines
// ending in LF or CRLF: the reference eventReader is checked against.
func refEvents(stream string) []event {
	var out []event
	var ev event
	var data []string
	hasData := false
	for line := range strings.Lines(stream) {
		text, ended := strings.CutSuffix(line, "\n")
		if !ended {
			break // an event the stream cuts off is dropped
		}
		text = strings.TrimSuffix(text, "\r")
		if text == "" {
			if hasData {
				if ev.typ == "" {
					ev.typ = "message"
				}
				ev.data = []byte(strings.Join(data, "\n"))
				out = append(out, ev)
			}
			ev, data, hasData = event{}, nil, false
			continue
		}
		field, value, _ := strings.Cut(text, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data, hasData = append(data, value), true
		case "event":
			ev.typ = value
		}
	}
	return out
}

// readAll reads every event of stream in reads of at most chunk bytes.
func readAll(stream string, limit, chunk int) ([]event, error) {
	r := newEventReader(iotest.HalfReader(&chunkReader{r: strings.NewReader(stream), n: chunk}), limit)
	var out []event
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// chunkReader returns at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestEventReader(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		limit        int
		want         []string // type:data of each event
		tooLarge     bool
	}{
		{"events, CRLF, comments, fields skipped", "event: endpoint\r\ndata: /m\r\n\r\n: hi\n\nid: 1\nretry: 5\ndata: {\"a\":\ndata:1}\n\n", 64, []string{"endpoint:/m", "message:{\"a\":\n1}"}, false},
		{"no data, no event", "event: x\n\n", 64, nil, false},
		{"cut off", "data: 1\n\ndata: 2", 64, []string{"message:1"}, false},
		{"an event of exactly the limit", "data: 0123456789\n\n", 17, []string{"message:0123456789"}, false},
		{"one byte over", "data: 0123456789\n\n", 16, nil, true},
		{"over in all, within each", "data: 0123456\n\ndata: 0123456\n\n", 16, []string{"message:0123456", "message:0123456"}, false},
		{"an endless line", "data: " + strings.Repeat("x", 200<<10), 100 << 10, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 1 << 20} {
				evs, err := readAll(tc.stream, tc.limit, chunk)
				var tl *jsonrpc.TooLargeError
				if tc.tooLarge != errors.As(err, &tl) || (!tc.tooLarge && err != nil) {
					t.Fatalf("chunks of %d: %v", chunk, err)
				}
				var got []string
				for _, ev := range evs {
					got = append(got, ev.typ+":"+string(ev.data))
				}
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Errorf("chunks of %d: %q, want %q", chunk, got, tc.want)
				}
			}
		})
	}
}

func FuzzEventReader(f *testing.F) {
	f.Add("data: 0123456\n\ndata: 0123456\r\n\r\n", 16, 3)
	f.Add("event: endpoint\ndata: /x\n\n:\n\n\n\r\r\n", 8, 1)
	f.Fuzz(func(t *testing.T, stream string, limit, chunk int) {
		if limit < 1 || limit > 1<<12 || chunk < 1 {
			t.Skip()
		}
		evs, err := readAll(stream, limit, chunk)
		var tl *jsonrpc.TooLargeError
		if err != nil && !errors.As(err, &tl) {
			t.Fatalf("error %v", err)
		}
		want := refEvents(stream)
		if len(evs) > len(want) {
			t.Fatalf("%d events, the reference has %d", len(evs), len(want))
		}
		for i, ev := range evs {
			if ev.typ != want[i].typ || string(ev.data) != string(want[i].data) {
				t.Fatalf("event %d: %q %q, want %q %q", i, ev.typ, ev.data, want[i].typ, want[i].data)
			}
			if len(ev.data) > limit {
				t.Fatalf("event %d of %d bytes over the limit %d", i, len(ev.data), limit)
			}
		}
		if err == nil && len(evs) != len(want) {
			t.Fatalf("%d events, want %d", len(evs), len(want))
		}
	})
}
