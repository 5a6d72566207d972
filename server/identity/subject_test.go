package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Two different subjects are never one caller: a subject with a control
// character is refused (the issuer's token, not a forged one), and a
// long subject is keyed on all of it, not on what is shown of it.
func TestSubjectsStayApart(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ctx := context.Background()
	for _, sub := range []string{"alice\x01", "alice\n", "\x7falice", "alice\u0085", "alice\u2028", "alice\ufffd"} {
		_, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": sub})))
		var te *TokenError
		if !errors.As(err, &te) || !te.Signed || !strings.Contains(te.Description, "subject") {
			t.Errorf("sub %q: %v, want a signed TokenError about the subject", sub, err)
		}
	}
	long := strings.Repeat("s", MaxText)
	a, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": long + "a"})))
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": long + "b"})))
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": long})))
	if err != nil {
		t.Fatal(err)
	}
	if a.Key() == b.Key() || a.Key() == c.Key() || len(a.Subject) > MaxText || len(a.Key()) > MaxText+100 {
		t.Errorf("long subjects: keys %q, %q, %q", a.Key(), b.Key(), c.Key())
	}
	again, _ := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": long + "a"})))
	if again == nil || again.Key() != a.Key() {
		t.Errorf("the same long subject twice: %v, want key %q", again, a.Key())
	}
}

// A profile entry's value matches a claim's value exactly: never what is
// left of a value once clipped.
func TestProfileValuesExact(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{Profiles: []config.AuthProfile{{Claim: "groups", Value: "admins", Profile: "admin"},
		{Claim: "groups", Value: strings.Repeat("g", MaxText), Profile: "g"}}})
	for _, groups := range [][]string{{"admins\a"}, {"adm\x00ins"}, {strings.Repeat("g", MaxText) + "x"}} {
		id, err := v.Verify(context.Background(), is.token(t, is.claims(map[string]any{"groups": groups})))
		if err != nil {
			t.Fatal(err)
		}
		if len(id.Claims) != 0 {
			t.Errorf("groups %q matched %v", groups, id.Claims)
		}
	}
}
