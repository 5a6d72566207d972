package main

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"
)

// front is a loopback listener the test keeps, with a reverse proxy to a
// server behind it that listens where the test cannot hold a port for it:
// a hub that picked its own (--http 127.0.0.1:0), hydra on a Unix socket.
// Its URL is known before that server starts, for what must name it in
// advance (the hub's audience, hydra's issuer), as a balancer's would be;
// until the server is there, requests are answered 502. The Host header
// passes unchanged, so that the server behind builds its links (a
// sign-in's callback) to the front's URL.
type front struct {
	URL    string
	target atomic.Pointer[[2]string] // network and address behind, or nil
}

// startFront starts a front with nothing behind it yet; it is closed
// when the test ends.
func startFront(t testing.TB) *front {
	t.Helper()
	f := &front{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			to := f.target.Load()
			if to == nil {
				return nil, errors.New("nothing behind the front yet")
			}
			var d net.Dialer
			return d.DialContext(ctx, to[0], to[1])
		},
		DisableCompression: true,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", r.In.Host // dialled by DialContext, whatever the host
		},
		Transport:     tr,
		FlushInterval: -1, // streams (SSE) pass at once
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	f.URL = srv.URL
	return f
}

// to puts the server at network and address (as net.Dial takes them)
// behind f.
func (f *front) to(network, address string) { f.target.Store(&[2]string{network, address}) }

// behind puts the server whose base URL is base (http://host:port, as
// startHTTPHub returns it) behind f.
func (f *front) behind(base string) { f.to("tcp", strings.TrimPrefix(base, "http://")) }
