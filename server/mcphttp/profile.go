package mcphttp

import (
	"context"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// profileKey carries the profile a request's URL names (/mcp/p/NAME).
type profileKey struct{}

// profileOf is the profile r's URL names, "" for /mcp.
func profileOf(r *http.Request) string {
	p, _ := r.Context().Value(profileKey{}).(string)
	return p
}

// profiled serves /mcp/p/NAME: Streamable HTTP as at /mcp, in sessions
// that see the profile NAME only. The profile is the URL's, not a
// session's choice, so one endpoint's lists never vary per connection (as
// 2026-07-28 requires); a session of one profile is not found at another's
// URL or at /mcp. A profile the config does not have is 404.
func (s *Server) profiled(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !s.hub.HasProfile(name) {
		httpguard.CloseUnread(w, r) // refused unread
		http.Error(w, "no such profile: "+clip.Echo(name), http.StatusNotFound)
		return
	}
	s.streamable(w, r.WithContext(context.WithValue(r.Context(), profileKey{}, name)))
}
