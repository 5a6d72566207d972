package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// SSE is the stream of a legacy HTTP+SSE upstream (2024-11-05,
// basic/transports): one GET opens the event stream, whose first event,
// endpoint, names where to POST messages; every answer and every message
// of the server arrives on that stream. The stream cannot skip an event
// over the limit (nothing else ends it), so one ends the stream.
type SSE struct {
	httpStream
	endpoint  string // where messages are POSTed; set before DialSSE returns
	closeOnce sync.Once
}

// DialSSE opens the event stream of the legacy SSE server at url and waits
// for its endpoint event within ctx. headers, authorization and limit are
// NewStreamable's.
func DialSSE(ctx context.Context, rawURL string, headers map[string]string, authorization func(context.Context) (string, error), limit int, logger *slog.Logger) (*SSE, error) {
	s := &SSE{httpStream: newHTTPStream(rawURL, headers, authorization, limit, logger)}
	base, err := url.Parse(rawURL)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sse: %w", err)
	}
	// The dial gave up: so does the GET.
	defer context.AfterFunc(ctx, func() { s.fail(fmt.Errorf("sse: %w", ctx.Err())) })()
	req, err := s.newRequest(s.ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sse: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		s.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sse: no answer to the GET: %w", ctx.Err())
		}
		return nil, fmt.Errorf("sse: GET: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		err := newHTTPError(resp)
		resp.Body.Close()
		s.Close()
		return nil, fmt.Errorf("sse: GET: %w", err)
	}
	if mediaType(resp) != "text/event-stream" {
		resp.Body.Close()
		s.Close()
		return nil, fmt.Errorf("sse: GET: content type %q, not text/event-stream", resp.Header.Get("Content-Type"))
	}
	endpoint := make(chan string, 1)
	if !s.goOwned("SSE stream", func() {
		defer resp.Body.Close()
		s.read(base, resp, endpoint)
	}) {
		resp.Body.Close()
	}
	select {
	case s.endpoint = <-endpoint:
		return s, nil
	case <-s.failed:
		select {
		case s.endpoint = <-endpoint:
			// Named, then over: the stream says so to its first Read.
			return s, nil
		default:
		}
		s.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sse: no endpoint event: %w", ctx.Err())
		}
		return nil, fmt.Errorf("sse: no endpoint event: %w", s.failErr)
	}
}

// read reads the event stream until it ends, which ends the SSE stream.
func (s *SSE) read(base *url.URL, resp *http.Response, endpoint chan<- string) {
	r := newEventReader(resp.Body, s.limit)
	named := false
	for {
		ev, err := r.next()
		var tl *jsonrpc.TooLargeError
		switch {
		case errors.Is(err, io.EOF):
			s.fail(errors.New("sse: the server ended the event stream"))
			return
		case errors.As(err, &tl):
			err := &streamTooLarge{size: tl.Size, limit: tl.Limit}
			s.logger.Warn("the SSE stream from the server broke off", "err", err)
			s.fail(fmt.Errorf("sse: %w", err))
			return
		case err != nil:
			s.fail(fmt.Errorf("sse: event stream: %w", err))
			return
		}
		switch ev.typ {
		case "endpoint":
			if named {
				continue
			}
			u, err := endpointURL(base, string(ev.data))
			if err != nil {
				s.fail(fmt.Errorf("sse: %w", err))
				return
			}
			named = true
			endpoint <- u
		case "message":
			if len(bytes.TrimSpace(ev.data)) == 0 {
				continue
			}
			if !s.deliver(inbound{msg: ev.data}) {
				return
			}
		}
	}
}

// endpointURL resolves the endpoint event's URL against the stream's. It
// must be on the same origin: a server must not make the hub POST its
// messages, with their headers and token, elsewhere.
func endpointURL(base *url.URL, ref string) (string, error) {
	u, err := base.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", ref, err)
	}
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return "", fmt.Errorf("endpoint %q is not on the origin of %s", ref, base.Redacted())
	}
	return u.String(), nil
}

// Write POSTs msg to the endpoint. Its answer, if any, comes on the event
// stream; a POST the server refuses fails the request's call.
func (s *SSE) Write(ctx context.Context, msg []byte) error {
	return s.write(ctx, msg, func(ctx context.Context, id json.RawMessage, method string) {
		if err := s.post(ctx, msg); err != nil {
			s.callFailed(ctx, id, fmt.Errorf("POST %s: %w", method, err))
		}
	}, func(ctx context.Context, method string) error {
		if err := s.post(ctx, msg); err != nil {
			return s.writeFailed(ctx, method, err)
		}
		return nil
	})
}

// post POSTs msg to the endpoint: nil once the server took it.
func (s *SSE) post(ctx context.Context, msg []byte) error {
	req, err := s.newRequest(ctx, http.MethodPost, s.endpoint, msg)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if resp.StatusCode/100 != 2 {
		return newHTTPError(resp)
	}
	return nil
}

// Close ends the stream and waits for its goroutines.
func (s *SSE) Close() error {
	s.closeOnce.Do(func() {
		s.fail(errStreamClosed)
		s.wg.Wait()
		s.client.CloseIdleConnections()
	})
	return nil
}
