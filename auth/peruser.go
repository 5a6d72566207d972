package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
)

// Per-user sign-ins (a server's auth: per-user): each caller of the hub
// with an identity signs in to such a server for themselves, and the
// record is kept apart from the shared one and from every other user's:
// <dir>/<server>/users/<hash of the user's key>.sealed, sealed by the same
// vault with the user's hash bound into the seal, so that a record copied
// to another user's file does not open.

// ForUser is the store of user's own sign-ins (user is the caller's key,
// such as "jwt:alice" or "token:ci"): the same directory and vault as s,
// records of that user alone. Listing it lists the shared records (List
// reads only the top of the directory).
func (s *Store) ForUser(user string) *Store {
	us := s.ForUserHash(UserHash(user))
	us.userKey = user
	return us
}

// UserHash is what a user's records are kept under: a hash of the
// user's key, so that file names and namespaces carry no subject.
func UserHash(user string) string {
	sum := sha256.Sum256([]byte(user))
	return hex.EncodeToString(sum[:16])
}

// userPath is the file of server's record of the store's user, with ext.
func (s *Store) userPath(server, ext string) string {
	name := s.user + ext
	if ext == ".lock" {
		name = "." + name
	}
	return filepath.Join(s.dir, url.PathEscape(server), "users", name)
}

// userDir makes the directory of server's per-user records, mode 0700;
// nothing for the shared store.
func (s *Store) userDir(server string) error {
	if s.user == "" {
		return nil
	}
	return os.MkdirAll(filepath.Dir(s.userPath(server, sealedExt)), 0o700)
}

// sealedFor is what a record of server is sealed for: the server's name,
// and the user's hash for a user's record.
func (s *Store) sealedFor(server string) string {
	if s.user == "" {
		return server
	}
	return server + "\x00user:" + s.user
}
