package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Whatever a caller sends as its bearer token, Verify answers with an
// identity only for a token the issuer signed, and never panics: a
// refusal is a *TokenError.
func FuzzVerify(f *testing.F) {
	is := newIssuer(f)
	v := newTestVerifier(is, config.HTTPAuth{Profiles: []config.AuthProfile{{Claim: "ext.team", Value: "x", Profile: "p"}}})
	good := is.token(f, is.claims(nil))
	f.Add(good)
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add(good[:len(good)-3] + "abc")
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(context.Background(), token)
		var te *TokenError
		switch {
		case err == nil && token != good && !strings.HasPrefix(token, good[:strings.LastIndex(good, ".")]):
			t.Fatalf("accepted %q as %+v", token, id)
		case err != nil && !errors.As(err, &te) && !errors.Is(err, ErrUnavailable):
			t.Fatalf("%q: %v is neither a TokenError nor ErrUnavailable", token, err)
		}
	})
}

// With introspection on, whatever a caller sends is accepted only if the
// issuer says it is active: a JWT-shaped one by the keys, any other by
// introspection; never a panic, and a refusal is a *TokenError.
func FuzzIntrospectedVerify(f *testing.F) {
	is := newIntrospectingIssuer(f)
	is.issue("ory_at_alice.sig", "alice", nil)
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, nil)
	f.Add("ory_at_alice.sig")
	f.Add("ory_at_alice.sig ")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(context.Background(), token)
		var te *TokenError
		switch {
		case err == nil && token != "ory_at_alice.sig":
			t.Fatalf("accepted %q as %+v", token, id)
		case err != nil && !errors.As(err, &te) && !errors.Is(err, ErrUnavailable):
			t.Fatalf("%q: %v is neither a TokenError nor ErrUnavailable", token, err)
		}
	})
}
