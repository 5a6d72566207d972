package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// padded is doc preceded by whitespace, so that it ends at byte size.
func padded(doc string, size int) string {
	return strings.Repeat(" ", size-len(doc)) + doc
}

// A metadata server, or a registration endpoint, cannot make the sign-in
// read more than 1 MiB of a document: one whose JSON value ends within
// the first 1 MiB is used, one a byte longer is not (as a miss: the next
// URL, then the defaults of 2025-03-26), and a refusal's body is kept to
// its first 4 KiB. Through SafeClient, the client every sign-in uses.
func TestDocumentsReadToOneMiB(t *testing.T) {
	const limit = 1 << 20
	var srv *httptest.Server
	var size int
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			fmt.Fprint(w, padded(fmt.Sprintf(`{"resource":"%s/mcp","authorization_servers":["%[1]s/as"]}`, srv.URL), size))
		case "/.well-known/oauth-authorization-server/as":
			fmt.Fprint(w, padded(fmt.Sprintf(`{"issuer":"%s/as","authorization_endpoint":"%[1]s/a","token_endpoint":"%[1]s/t"}`, srv.URL), size))
		case "/register":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, padded(`{"client_id":"c1"}`, size))
		case "/refuse":
			http.Error(w, strings.Repeat("x", 10<<10), http.StatusBadRequest)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	hc := SafeClient()
	for _, c := range []struct {
		size int
		used bool
	}{{limit, true}, {limit + 1, false}} {
		size = c.size
		prm, err := fetchResourceMetadata(t.Context(), hc, srv.URL+"/mcp", "")
		if err != nil || (len(prm.AuthorizationServers) == 1) != c.used {
			t.Errorf("resource metadata of %d bytes: %+v, %v, want used %v", c.size, prm, err, c.used)
		}
		if md := findServerMetadata(t.Context(), hc, srv.URL+"/as"); (md != nil) != c.used {
			t.Errorf("authorization server metadata of %d bytes: %+v, want used %v", c.size, md, c.used)
		}
		reg, err := register(t.Context(), hc, srv.URL+"/register", "http://127.0.0.1:1/callback", nil)
		if (err == nil) != c.used || (!c.used && !strings.Contains(err.Error(), "unexpected EOF")) {
			t.Errorf("registration answer of %d bytes: %+v, %v, want used %v", c.size, reg, err, c.used)
		}
	}
	_, err := register(t.Context(), hc, srv.URL+"/refuse", "http://127.0.0.1:1/callback", nil)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Body != strings.Repeat("x", 4<<10) {
		t.Errorf("a refusal of 10 KiB: %.100v", err)
	}
}

// A document that never ends is read to 1 MiB and no further: one whose
// JSON value is whole by then is used (the rest is never read), one whose
// value is not is a miss; either way the connection is closed, and the
// server's writing ends. A server that sends its headers and then nothing
// holds the sign-in until its context ends, no longer.
func TestDocumentsThatNeverEnd(t *testing.T) {
	var done sync.WaitGroup
	headersSent := make(chan struct{}, 1)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var head string
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server/whole":
			head = fmt.Sprintf(`{"issuer":"%s/whole","authorization_endpoint":"%[1]s/a","token_endpoint":"%[1]s/t"}`, srv.URL)
		case "/.well-known/oauth-authorization-server/open":
			head = fmt.Sprintf(`{"issuer":"%s/open","authorization_endpoint":"`, srv.URL)
		case "/.well-known/oauth-authorization-server/silent":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			headersSent <- struct{}{}
			<-r.Context().Done()
			return
		default:
			http.NotFound(w, r)
			return
		}
		done.Add(1)
		defer done.Done()
		if _, err := fmt.Fprint(w, head); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("a", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	hc := SafeClient()
	if md := findServerMetadata(t.Context(), hc, srv.URL+"/whole"); md == nil || md.TokenEndpoint != srv.URL+"/t" {
		t.Errorf("a whole document followed by no end: %+v", md)
	}
	if md := findServerMetadata(t.Context(), hc, srv.URL+"/open"); md != nil {
		t.Errorf("a document that never ends: %+v", md)
	}
	// Each endless answer's writing ends, the client having closed its
	// connection (the test's deadline, should it not).
	done.Wait()

	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-headersSent:
			cancel()
		case <-ctx.Done():
		}
	}()
	if md := findServerMetadata(ctx, hc, srv.URL+"/silent"); md != nil || ctx.Err() == nil {
		t.Errorf("a silent body: %+v, context %v", md, ctx.Err())
	}
}

// spyTransport records the requests that reach the transport, and its
// answer to each. It passes on those to loopback and to the metadata
// address (whose dial SafeClient refuses) only, so that nothing leaves the
// machine should the redirect check fail.
type spyTransport struct {
	inner http.RoundTripper
	mu    sync.Mutex
	seen  []string
}

func (s *spyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var resp *http.Response
	err := errors.New("not passed on by the test")
	if h := r.URL.Hostname(); h == "127.0.0.1" || h == "169.254.169.254" {
		resp, err = s.inner.RoundTrip(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, fmt.Sprintf("%s %v", r.URL, err))
	return resp, err
}

// A metadata URL that redirects the sign-in elsewhere: to plain http
// outside loopback the redirect is not followed (no request leaves), to a
// cloud metadata address (https) the dialer refuses it, to loopback it is
// followed (a local development server), and the fifth redirect is not
// followed. Each refused one is a miss.
func TestMetadataRedirects(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "/.well-known/oauth-authorization-server/"
		switch to, _ := strings.CutPrefix(r.URL.Path, prefix); to {
		case "private":
			http.Redirect(w, r, "http://10.0.0.1/as", http.StatusFound)
		case "metadata":
			http.Redirect(w, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "loopback":
			http.Redirect(w, r, "/doc", http.StatusFound)
		case "loop":
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		default:
			if r.URL.Path != "/doc" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"issuer":"%s/loopback","authorization_endpoint":"%[1]s/a","token_endpoint":"%[1]s/t"}`, srv.URL)
		}
	}))
	t.Cleanup(srv.Close)
	safe := SafeClient()
	for _, c := range []struct {
		issuer string
		used   bool
		// reached is in what the transport saw last for the first
		// metadata URL.
		reached string
	}{
		{"private", false, "/.well-known/oauth-authorization-server/private <nil>"},
		{"metadata", false, "https://169.254.169.254/latest/meta-data/ dial tcp 169.254.169.254:443: refusing to connect to 169.254.169.254: link-local or metadata address"},
		{"loopback", true, "/doc <nil>"},
		{"loop", false, "/.well-known/oauth-authorization-server/loop <nil>"},
	} {
		spy := &spyTransport{inner: safe.Transport}
		hc := &http.Client{Transport: spy, CheckRedirect: safe.CheckRedirect, Timeout: safe.Timeout}
		md := findServerMetadata(t.Context(), hc, srv.URL+"/"+c.issuer)
		if (md != nil) != c.used {
			t.Errorf("%s: %+v, want used %v", c.issuer, md, c.used)
		}
		// The first metadata URL's requests: the redirects followed.
		var first []string
		for _, s := range spy.seen {
			if !strings.Contains(s, "openid-configuration") {
				first = append(first, strings.TrimPrefix(s, srv.URL))
			}
		}
		switch {
		case c.issuer == "loop" && len(first) != 5:
			t.Errorf("loop: %d requests, want the first and 4 redirects: %q", len(first), first)
		case len(first) == 0 || !strings.Contains(first[len(first)-1], c.reached):
			t.Errorf("%s: the transport saw %q, want last %q", c.issuer, first, c.reached)
		}
	}
}
