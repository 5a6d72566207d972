package sse

import (
	"net/http/httptest"
	"testing"
	"time"
)

// The bytes of each kind of event, as both writers wrote them before they
// were one: an event with an id and a name, a message without an id, the
// priming event (an id, no name, no data), a keep-alive comment; each
// written together at Flush, and the buffer empty after it.
func TestWriterFrames(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := NewWriter(rec, time.Second)
	sw.Event("s-1", "message", []byte(`{"a":1}`))
	sw.Event("", "row", []byte(`{}`))
	sw.Event("s-1", "", nil)
	sw.Comment("keep-alive")
	if rec.Body.Len() != 0 {
		t.Fatal("written before Flush")
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	const want = "id: s-1\nevent: message\ndata: {\"a\":1}\n\n" + "event: row\ndata: {}\n\n" + "id: s-1\ndata: \n\n" + ": keep-alive\n\n"
	if got := rec.Body.String(); got != want || !rec.Flushed || sw.Len() != 0 {
		t.Fatalf("wrote %q (flushed %v, %d left), want %q", got, rec.Flushed, sw.Len(), want)
	}
}
