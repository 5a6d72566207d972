package config

// ServerAuth says whose sign-in a remote server's calls carry (a
// server's auth: key).
type ServerAuth string

// The sign-ins a server's calls may carry.
const (
	// AuthShared (the default, also ""): one sign-in, `auth login NAME`,
	// for every caller.
	AuthShared ServerAuth = "shared"
	// AuthPerUser: each caller with an identity (http.auth, or a named
	// static token) signs in for themselves, through the hub's HTTP face
	// (/auth/start), and their calls go on a connection of their own that
	// carries their token alone. The hub's own sign-in, if any, serves the
	// server's lists and callers without an identity (stdio: one user).
	AuthPerUser ServerAuth = "per-user"
)

// PerUser reports whether s's calls carry the calling user's own sign-in.
func (s *Server) PerUser() bool { return s.Auth == AuthPerUser }
