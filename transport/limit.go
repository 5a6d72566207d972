package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ErrTooLarge is matched (errors.Is) by the error that ends an upstream's
// stream because one of its events went over settings.max_message_size
// (a legacy SSE stream cannot skip it: its events have no other end).
var ErrTooLarge = errors.New("over the size limit")

// streamTooLarge ends a stream whose event went over the limit. It does
// not unwrap to the *jsonrpc.TooLargeError, which would tell the Conn
// that reading may go on.
type streamTooLarge struct{ size, limit int }

func (e *streamTooLarge) Error() string {
	return fmt.Sprintf("upstream SSE event over the %d byte limit (settings.max_message_size)", e.limit)
}

func (e *streamTooLarge) Is(target error) bool { return target == ErrTooLarge }

// maxIdleConns is how many idle connections to one upstream are kept for
// the next POST: as many as calls commonly run at once, where
// http.DefaultTransport keeps 2 and so opens a new connection for nearly
// every call once more than 2 are in flight.
const maxIdleConns = 64

// newHTTPClient is the HTTP client of one remote upstream's stream: a
// transport of its own (closed with the stream) set as
// http.DefaultTransport is, and no timeout of its own (a stream must not
// have one: each request is bounded by its context). What the server
// sends is bounded where it is read: readBody, eventReader. A redirect is
// followed on the origin of the request only (sameOrigin).
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdleConns
	return &http.Client{Transport: t, CheckRedirect: sameOrigin}
}

// maxRedirects is how many redirects a request follows, as net/http's
// default does.
const maxRedirects = 10

// sameOrigin refuses a redirect to another origin: net/http would send
// it the configured headers (an API key; it drops only Authorization and
// cookies) and a 307's or 308's body, the message, as the endpoint event
// of a legacy SSE server may not (endpointURL).
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("redirect to %s refused: not on the origin of %s", req.URL.Redacted(), from.Redacted())
	}
	return nil
}

// readBody reads a JSON body of at most limit bytes; a longer one is not
// read past limit+1 bytes and is a *jsonrpc.TooLargeError.
func readBody(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, &jsonrpc.TooLargeError{Size: len(b), Limit: limit, Head: bytes.Clone(b[:min(len(b), headKept)])}
	}
	return bytes.TrimSpace(b), nil
}

// errorBodyKept is how much of an error page is read, for the error.
const errorBodyKept = 4 << 10

// HTTPError is a remote upstream's refusal of an HTTP request: its status,
// the challenge of a 401 or 403 (WWW-Authenticate: an OAuth token refused,
// or one without the scope needed), the first bytes of its body.
type HTTPError struct {
	Status          int
	WWWAuthenticate string
	Body            string
	// Authorization is the header the refused request carried, for the
	// token source to tell which token was refused (auth.Source.Renew);
	// Error does not show it.
	Authorization string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("HTTP status %d %s", e.Status, http.StatusText(e.Status))
	if e.WWWAuthenticate != "" {
		s += " (WWW-Authenticate: " + e.WWWAuthenticate + ")"
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// newHTTPError reads what it keeps of resp's body.
func newHTTPError(resp *http.Response) *HTTPError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyKept))
	e := &HTTPError{Status: resp.StatusCode, WWWAuthenticate: resp.Header.Get("WWW-Authenticate"), Body: string(bytes.TrimSpace(b))}
	if resp.Request != nil {
		e.Authorization = resp.Request.Header.Get("Authorization")
	}
	return e
}
