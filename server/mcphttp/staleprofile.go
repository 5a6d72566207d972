package mcphttp

import (
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// profileStale reports whether the caller of r, signed in with a token
// of http.auth's issuer, no longer sees the profile hs sees: its claims
// now choose another (a user taken out of the group that chose it), or
// allow none at hs's URL. Such a session is not the caller's any more
// (404, as one not found): the client opens a new one, in the profile
// its claims choose now. Closing it (DELETE) is still the caller's.
func profileStale(auth *config.HTTPAuth, hs *httpSession, r *http.Request) bool {
	who := httpguard.IdentityOf(r.Context())
	if r.Method == http.MethodDelete || who == nil || who.Kind != identity.KindJWT || hs.sess == nil {
		return false
	}
	seen, err := identity.ChooseProfile(auth, who, hs.profile)
	return err != nil || seen != hs.sess.State().Profile
}
