package identity

import (
	"context"
	"encoding/base64"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A JWT's header is parsed before its signature is checked, by a JSON
// decoder (go-jose's) that has no nesting limit: a forged token whose
// header is deeply nested arrays, as large as the HTTP face's 64 KiB of
// headers allow, is refused as malformed before it is parsed, not at the
// cost of megabytes of memory and stack per request.
func TestHugeHeaderRefusedCheaply(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(is, config.HTTPAuth{})
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.token(t, is.claims(nil))); err != nil { // discovered, keys fetched
		t.Fatal(err)
	}
	n := 24000
	header := `{"alg":"RS256","kid":"k1","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	token := base64.RawURLEncoding.EncodeToString([]byte(header)) + ".e30.c2ln"
	if len(token) > 64<<10 {
		t.Fatalf("token of %d bytes, over the face's header limit", len(token))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := v.Verify(ctx, token)
	runtime.ReadMemStats(&after)
	var te *TokenError
	if !errors.As(err, &te) || te.Signed {
		t.Errorf("a nested header: %v, want an unsigned TokenError", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing a %d-byte token allocated %d KiB, want under 1 MiB", len(token), alloc>>10)
	}
}
