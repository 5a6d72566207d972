package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A token no user signed in for, a client's own (the client credentials
// grant: its subject is the client's id, RFC 9068 section 2.2), is not a
// caller: with dynamic client registration open at the issuer (as MCP
// clients need it), anyone on the internet could register a client,
// name the hub as its audience, and call the hub as a "user" of the
// default profile. It is refused, JWT or introspected, as the issuer's
// (not counted as a guess).
func TestClientCredentialsTokensRefused(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ctx := context.Background()
	const client = "6f1c2a9e-0d55-4b7e-9a57-3c1f1e2b8d10"
	var te *TokenError
	_, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": client, "client_id": client, "name": nil, "groups": nil})))
	if !errors.As(err, &te) || !te.Signed || !strings.Contains(te.Description, "client") {
		t.Errorf("a JWT of the client credentials grant: %v, want refused (signed) as a client's own", err)
	}
	// A user's token through that client is the user's.
	if id, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"client_id": client}))); err != nil || id.Subject != "alice" {
		t.Errorf("a user's JWT with a client_id: %+v %v", id, err)
	}

	in := newIntrospectingIssuer(t)
	vi := newIntrospectingVerifier(in, config.AuthIntrospection{URL: in.srv.URL + "/introspect"}, nil)
	in.issue("ory_at_client", client, map[string]any{"client_id": client, "ext": nil})
	if _, err := vi.Verify(ctx, "ory_at_client"); !errors.As(err, &te) || !te.Signed || !strings.Contains(te.Description, "client") {
		t.Errorf("an introspected token of the client credentials grant: %v, want refused (signed) as a client's own", err)
	}
	in.issue("ory_at_alice", "alice", map[string]any{"client_id": client})
	if _, err := vi.Verify(ctx, "ory_at_alice"); err != nil {
		t.Errorf("a user's introspected token with a client_id: %v", err)
	}
}
