package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// How a call's answer stream that ends before the answer is resumed
// (2025-11-25, basic/transports, "Resumability and Redelivery"): a GET
// with Last-Event-ID after the wait the server asked for with a retry
// field (resumeWait when it asked for none), never more than resumeMaxWait;
// at most resumeTries resumes in a row that bring no message.
const (
	resumeWait    = time.Second
	resumeMaxWait = 5 * time.Second
	resumeTries   = 5
)

// resumeRules are the bounds of resume; zero fields are the defaults
// above (tests shorten them).
type resumeRules struct {
	wait, maxWait time.Duration
	tries         int
}

// errResumeStalled ends a call whose stream the server kept ending
// without the answer, resumed resumeTries times in a row in vain.
var errResumeStalled = errors.New("the server kept ending the answer stream without the answer")

// resume goes on reading the answer stream of the call method, which r
// read until it ended (err: nil for a clean end, or why it broke off)
// before the answer, as a server may end it (SEP-1699: it closes a POST's
// stream to have the client poll). Each GET with the stream's last event
// id brings what the server sent after it; its events go to fn as those
// of the POST's stream did. It returns nil once fn took the answer; err
// as it is when the stream cannot be resumed (no event id, an event over
// the limit, the call given up); otherwise why the resumes failed.
func (s *Streamable) resume(ctx context.Context, method string, r *eventReader, err error, fn func(data []byte) (last bool)) error {
	var tl *jsonrpc.TooLargeError
	if r.lastID == "" || errors.As(err, &tl) || ctx.Err() != nil {
		return err // a stream without ids cannot be resumed: the call fails alone
	}
	rules := s.resumeRules.orDefaults()
	answered, progress := false, false
	track := func(data []byte) bool {
		progress = true
		last := fn(data)
		answered = answered || last
		return last
	}
	for vain := 0; ; {
		if vain >= rules.tries {
			return fmt.Errorf("%w (%d resumes from event %q brought nothing)", errResumeStalled, vain, r.lastID)
		}
		wait := rules.wait
		if r.retry > 0 {
			wait = r.retry
		}
		if !sleepCtx(ctx, min(wait, rules.maxWait)) {
			return ctx.Err()
		}
		s.logger.Debug("resuming an answer stream the server ended", "method", method, "last_event_id", r.lastID, "after", err)
		next, gerr := s.resumeStream(ctx, r)
		if gerr != nil {
			return gerr
		}
		progress = false
		err = s.readEventsFrom(next.eventReader, track)
		next.close()
		switch {
		case answered:
			return nil
		case errors.As(err, &tl), ctx.Err() != nil:
			return err
		case progress:
			vain = 0
		default:
			vain++
		}
		r = next.eventReader
	}
}

// resumedStream is the body of a GET that resumes an answer stream, read
// by an eventReader that goes on from the last one.
type resumedStream struct {
	*eventReader
	close func()
}

// resumeStream GETs what the server sent on the answer stream r read
// after its last event. The reader it returns starts with r's last event
// id and retry time, as an EventSource keeps them across reconnections.
func (s *Streamable) resumeStream(ctx context.Context, r *eventReader) (resumedStream, error) {
	resp, err := s.get(ctx, r.lastID)
	if err != nil {
		return resumedStream{}, fmt.Errorf("GET to resume from event %q: %w", r.lastID, err)
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		defer closeBody(resp)
		if resp.StatusCode != http.StatusOK {
			return resumedStream{}, fmt.Errorf("the server refused to resume the answer stream from event %q: %w", r.lastID, newHTTPError(resp))
		}
		return resumedStream{}, fmt.Errorf("the server answered the GET to resume from event %q with content type %q", r.lastID, resp.Header.Get("Content-Type"))
	}
	next := newEventReader(resp.Body, s.limit)
	next.lastID, next.idBuf, next.retry = r.lastID, r.lastID, r.retry
	return resumedStream{eventReader: next, close: func() { closeBody(resp) }}, nil
}

// orDefaults is rules with the defaults in place of zero fields.
func (rules resumeRules) orDefaults() resumeRules {
	if rules.wait <= 0 {
		rules.wait = resumeWait
	}
	if rules.maxWait <= 0 {
		rules.maxWait = resumeMaxWait
	}
	if rules.tries <= 0 {
		rules.tries = resumeTries
	}
	return rules
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
