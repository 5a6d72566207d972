package mcphttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// Attacks on per-user sign-ins by another user of the team (issue 25).

// startUntilUpstream opens link in b and presses its button, following
// the redirects (through the hub's identity provider, when it confirms)
// until the one that would leave for the upstream's authorization
// server: that URL, not visited.
func (b *browser) startUntilUpstream(t *testing.T, p *perUser, link string) string {
	t.Helper()
	c := *b.client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == "/authorize" && !strings.HasPrefix(req.URL.String(), p.li.srv.URL) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, body := b.page(t, link)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the link's page: %d %s", resp.StatusCode, body)
	}
	u, _ := url.Parse(link)
	resp, err := c.Do(startRequest(t, link, body, u.Scheme+"://"+u.Host))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || !strings.Contains(to, "/authorize") {
		t.Fatalf("pressing the button: %d, to %q; want a redirect to the upstream's authorization endpoint", resp.StatusCode, to)
	}
	return to
}

// Mallory starts a sign-in of his own (his link, confirmed at the hub's
// identity provider as himself where it confirms) and, instead of going
// on to the upstream's authorization server, sends that URL to alice:
// it is the upstream's own page, and where alice has signed in there
// before it may not even ask her. Her browser coming back to
// /auth/callback must not finish mallory's sign-in, which would keep
// alice's upstream account as mallory's (his calls running as alice
// upstream). The callback is bound to the browser that was sent away,
// by a cookie; mallory's own browser still finishes his own sign-in.
func TestSignInCallbackBoundToBrowser(t *testing.T) {
	p := newPerUser(t, ", client_id: hub-sign-in")
	for _, mallory := range []string{"mallory", "ci"} { // confirmed at the identity provider, and by its page alone
		authURL := newBrowser(mallory).startUntilUpstream(t, p, p.link(mallory))
		alice := newBrowser("alice")
		resp, body := alice.page(t, authURL)
		if resp.StatusCode == http.StatusOK || strings.Contains(body, "is signed in to docs") {
			t.Errorf("%s's authorization URL opened in alice's browser: %d %s; want refused", mallory, resp.StatusCode, body)
		}
		if got := p.call(mallory); !strings.Contains(got, `"code":-32042`) {
			t.Errorf("%s's call after alice's browser finished his sign-in: %s; want -32042 (nothing signed in)", mallory, got)
		}

		b := newBrowser(mallory)
		authURL = b.startUntilUpstream(t, p, p.link(mallory))
		if resp, body := b.page(t, authURL); resp.StatusCode != http.StatusOK || !strings.Contains(body, "is signed in to docs") {
			t.Fatalf("%s's own browser finishing his sign-in: %d %s", mallory, resp.StatusCode, body)
		}
		if got := p.call(mallory); !strings.Contains(got, "hello "+mallory) {
			t.Errorf("%s's call after signing in: %s", mallory, got)
		}
	}
}

// A caller's name is a claim of their token, which an identity provider
// may let its user choose: mallory, named "Alice" there, sends alice his
// link. Its page must not read as hers: it names the account the link
// signs in (the token's subject) besides the name, wherever the two
// differ. (With http.auth.client_id the identity provider refuses her
// anyway; without it the page is all she has to go by.)
func TestSignInPageNamesTheAccount(t *testing.T) {
	p := newPerUser(t, "")
	c := &bearerClient{t: t, url: p.url + "/mcp", token: p.li.token(t, "mallory", "Alice", testAudience)}
	if code := c.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	p.clients["mallory"] = c
	resp, body := newBrowser("alice").page(t, p.link("mallory"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "mallory") {
		t.Errorf("the page of mallory's link, named Alice: %d %s; want it to name the account mallory", resp.StatusCode, body)
	}
	// Alice's own link: her name, and her account.
	if _, body := newBrowser("alice").page(t, p.link("alice")); !strings.Contains(body, "as <b>Alice</b> (account alice)") {
		t.Errorf("the page of alice's link: %s", body)
	}
}

// A per-user server's authorization server names, as its token
// endpoint, a service inside the hub's network (https, or loopback as
// here: auth.CheckURL lets both through, and the hub's network is where
// upstreams live). The hub posts the code there; whatever it answers
// must not come back to the browser on the callback's page, nor its
// registration endpoint's answer on the start's: the sign-in's page is
// not a window onto the hub's network for whoever runs an upstream and
// signs in to it. The page says what failed, briefly; the log has the
// rest.
func TestSignInPagesShowNoEndpointBody(t *testing.T) {
	a, seen, dir := savedUpstream(t)
	p := startPerUser(t, a, seen, dir, "", nil)
	const secret = "internal-service-secret-0123"
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "%s\n%s", strings.Repeat("x", 300), secret)
	}))
	defer internal.Close()
	// The registration first: a later user's sign-in uses the client
	// registered at the first (shared registration) and registers none.
	a.Lock()
	a.RegistrationEndpoint = internal.URL + "/register"
	a.Unlock()
	code, body := newBrowser("bob").open(t, p.link("bob"))
	if code != http.StatusBadGateway || strings.Contains(body, secret) || strings.Contains(body, "xxxx") || !strings.Contains(body, "HTTP status 404") {
		t.Errorf("the start's page with the registration endpoint's answer: %d %s; want 502 without its body", code, body)
	}

	a.Lock()
	a.TokenEndpoint, a.RegistrationEndpoint = internal.URL+"/token", ""
	a.Unlock()
	code, body = newBrowser("alice").open(t, p.link("alice"))
	if code != http.StatusBadRequest || strings.Contains(body, secret) || strings.Contains(body, "xxxx") || !strings.Contains(body, "the sign-in to docs failed") {
		t.Errorf("the callback's page with the token endpoint's answer: %d %s; want 400 without its body", code, body)
	}
}

// Mix-up (RFC 9700 §4.4): a per-user server's authorization server X,
// malicious, sends alice's browser on from its authorization endpoint to
// that of another server's, Y, with the hub's client there (a
// pre-registered one, which alice approved before), the hub's redirect
// and X's flow's state. Y sends her back with a code for Y; if Y does not
// name itself (iss, RFC 9207) the hub took the redirect as X's and sent
// Y's code to X's token endpoint. Each server's flow has a redirect of
// its own, /auth/callback/<server>, which is what Y's client is
// registered with: a redirect to one server's callback carrying another
// server's state is refused, and nothing is kept.
func TestSignInCallbackOfEachServer(t *testing.T) {
	p := newPerUser(t, "")
	b := newBrowser("alice")
	authURL, err := url.Parse(b.startUntilUpstream(t, p, p.link("alice")))
	if err != nil {
		t.Fatal(err)
	}
	if got := authURL.Query().Get("redirect_uri"); got != p.url+"/auth/callback/docs" {
		t.Errorf("the redirect sent to docs' authorization server: %s; want %s/auth/callback/docs", got, p.url)
	}
	state := url.QueryEscape(authURL.Query().Get("state"))
	for _, other := range []string{"/auth/callback/other", "/auth/callback/other/docs", "/auth/callback"} {
		resp, body := b.page(t, p.url+other+"?code=the-code&state="+state)
		if resp.StatusCode == http.StatusOK || strings.Contains(body, "is signed in") {
			t.Errorf("docs' state at %s: %d %s; want refused", other, resp.StatusCode, body)
		}
	}
	if got := p.call("alice"); !strings.Contains(got, `"code":-32042`) {
		t.Errorf("alice's call after another server's redirect: %s; want -32042 (nothing signed in)", got)
	}
	// Her own sign-in, all the way, comes back at docs' callback.
	if code, body := b.open(t, p.link("alice")); code != http.StatusOK || !strings.Contains(body, "Alice is signed in to docs") {
		t.Fatalf("alice's sign-in: %d %s", code, body)
	}
}

// /auth/start takes a POST from anyone (the state is the credential), so
// an outsider may trickle its body: each such request would hold its
// connection and goroutine for as long as the trickle goes on, without
// bound. Its body is read within the body timeout, as /mcp's: cut with
// 408 about then, and the connection closed, not held while net/http
// reads the rest of the body once the page is done.
func TestSignInStartBodyTimeout(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	_, ts := serveHTTPWith(t, h, Options{BodyTimeout: time.Second})
	nc, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	fmt.Fprintf(nc, "POST /auth/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\n")
	go func() {
		for range 4000 {
			if _, err := nc.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// The whole trickle takes 800 s: a 408 well before its end is the
	// body deadline's, however busy the machine.
	nc.SetReadDeadline(time.Now().Add(2 * time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("a trickled sign-in form, after %v: %v; want 408 after about 1s", elapsed, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || elapsed > time.Minute {
		t.Errorf("a trickled sign-in form: %d after %v, want 408 after about 1s", resp.StatusCode, elapsed)
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // the trickle goes on for minutes more
	if _, err := io.Copy(io.Discard, nc); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a trickled sign-in form: the connection still open %v after its 408", time.Since(start)-elapsed)
	}
}
