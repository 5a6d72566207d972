package mcphttp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
)

// perUserWithAS is newPerUser's hub, with the authorization server, whose
// registrations are counted: registered is how many the hub made itself,
// for the users (its own sign-in, at a loopback redirect, is not one).
func perUserWithAS(t *testing.T) (*perUser, *authtest.Server, func() int) {
	a, seen, dir := savedUpstream(t)
	return startPerUser(t, a, seen, dir, "", nil), a, registrations(a)
}

// registrations counts a's registrations from now on.
func registrations(a *authtest.Server) func() int {
	a.Lock()
	before := a.Registered
	a.Unlock()
	return func() int {
		a.Lock()
		defer a.Unlock()
		return a.Registered - before
	}
}

// signInAs has user call, follow the link and sign in, and call again
// with their own token.
func (p *perUser) signInAs(user string) {
	p.t.Helper()
	if code, got := newBrowser(user).open(p.t, p.link(user)); code != http.StatusOK || !strings.Contains(got, people[user]+" is signed in to docs") {
		p.t.Fatalf("%s's sign-in: %d %s", user, code, got)
	}
	if got := p.call(user); !strings.Contains(got, "hello "+user) {
		p.t.Fatalf("%s's call after signing in: %s", user, got)
	}
}

// Two users sign in to a per-user server through the hub: the hub
// registers one client with the authorization server, at the first
// sign-in, and the second user's sign-in uses it; each user's token is
// their own.
func TestPerUserSignInsShareRegistration(t *testing.T) {
	p, _, registered := perUserWithAS(t)
	p.signInAs("alice")
	p.signInAs("bob")
	if n := registered(); n != 1 {
		t.Errorf("two users signed in through the hub, %d client registrations; want 1", n)
	}
	for tok := range p.tokensOf("alice") {
		if p.tokensOf("bob")[tok] {
			t.Errorf("alice and bob called with the same token %s", tok)
		}
	}
}

// The authorization server forgets the hub's client (a reset): the next
// user's sign-in registers a new one, once, and succeeds, and the user
// after that uses the new one.
func TestPerUserSignInForgottenClient(t *testing.T) {
	p, a, registered := perUserWithAS(t)
	p.signInAs("alice")
	a.Forget()
	p.signInAs("bob")
	if n := registered(); n != 2 {
		t.Errorf("after the server forgot the client, %d registrations in all; want 2 (alice's, then one again for bob)", n)
	}
	p.signInAs("mallory")
	if n := registered(); n != 2 {
		t.Errorf("a third user's sign-in: %d registrations in all; want still 2", n)
	}
}

// With store:, two replicas' first sign-ins, at once, of two users, each
// through another replica, make one registration: the second waits for
// the first's and uses it.
func TestPerUserRegistrationAcrossReplicas(t *testing.T) {
	r := newTwoReplicas(t)
	a := r.as
	registered := registrations(a)
	a.Lock()
	a.RegisterDelay = time.Second // the two sign-ins overlap in it
	a.Unlock()
	// The balancer, whose URL the replicas share (the redirect is one):
	// alice's browser reaches the first replica, bob's the second.
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		i := 0
		if pr.In.Header.Get("X-Test-Person") == "bob" {
			i = 1
		}
		u, _ := url.Parse(r.faces[i].URL)
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
	}})
	defer lb.Close()
	p := &perUser{t: t, li: r.li, url: lb.URL, calls: r.seen, clients: map[string]*bearerClient{}}
	links := map[string]string{"alice": p.link("alice"), "bob": p.link("bob")}
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for user, link := range links {
		wg.Go(func() {
			if code, got := newBrowser(user).open(t, link); code != http.StatusOK || !strings.Contains(got, people[user]+" is signed in to docs") {
				errs <- fmt.Sprintf("%s's sign-in: %d %s", user, code, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := registered(); n != 1 {
		t.Errorf("two users signed in at once through two replicas, %d client registrations; want 1", n)
	}
}

// The authorization server forgets the hub's client in the middle of a
// sign-in, between the authorization and the code's exchange: the
// callback starts the sign-in once more, which registers again, and the
// user's one visit signs them in.
func TestPerUserSignInClientForgottenMidway(t *testing.T) {
	p, a, registered := perUserWithAS(t)
	a.Lock()
	a.ForgetAtAuthorize = 1
	a.Unlock()
	p.signInAs("alice")
	if n := registered(); n != 2 {
		t.Errorf("a client forgotten during the sign-in: %d registrations; want 2", n)
	}
	p.signInAs("bob")
	if n := registered(); n != 2 {
		t.Errorf("the next user's sign-in: %d registrations in all; want still 2", n)
	}
}

// A client rejected at the exchange of a sign-in's second try too ends
// the sign-in, with a message: a sign-in is tried again once, never in
// a loop through the user's browser.
func TestPerUserSignInClientRejectedTwice(t *testing.T) {
	p, a, registered := perUserWithAS(t)
	a.Lock()
	a.ForgetAtAuthorize = 3
	a.Unlock()
	code, got := newBrowser("alice").open(t, p.link("alice"))
	if code != http.StatusBadRequest || !strings.Contains(got, "does not know the hub&#39;s client") {
		t.Errorf("a client rejected at both tries: %d %s; want 400 saying the client is not known", code, got)
	}
	if n := registered(); n != 2 {
		t.Errorf("%d registrations; want 2 (the first try's, the second's)", n)
	}
}
