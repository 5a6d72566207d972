package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A subject that only looks like another's, by an invisible format
// character (zero-width space or joiner, a word joiner, a BOM) or a
// bidirectional override that shows it reversed, is refused as one with
// a control character is: its audit lines, inspector rows and traces
// would read as Alice's. A name (shown, never a key) has them dropped,
// and C1 controls too.
func TestLookalikeSubjectsRefused(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ctx := context.Background()
	for _, sub := range []string{"alice\u200b", "al\u200dice", "\u2060alice", "alice\ufeff", "\u202eecila", "alice\u2066"} {
		_, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"sub": sub})))
		var te *TokenError
		if !errors.As(err, &te) || !te.Signed || !strings.Contains(te.Description, "subject") {
			t.Errorf("sub %q: %v, want a signed TokenError about the subject", sub, err)
		}
	}
	id, err := v.Verify(ctx, is.token(t, is.claims(map[string]any{"name": "\u202eecilA\u200b\u0085 Mallory"})))
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "ecilA Mallory" {
		t.Errorf("name %q, want %q (format and control characters dropped)", id.Name, "ecilA Mallory")
	}
}
