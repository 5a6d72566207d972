package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// UserRecord is one user's own sign-in to a server (auth: per-user).
type UserRecord struct {
	// Hash is UserHash of the user's key: what the record is kept under.
	Hash string
	*Record
}

// stamp writes the store's user's key into r, a record of that user's.
func (s *Store) stamp(r *Record) {
	if s.userKey != "" {
		r.User = s.userKey
	}
}

// ForUserHash is the store of the sign-ins of the user whose UserHash is
// hash (a user known only by a record ListUsers listed).
func (s *Store) ForUserHash(hash string) *Store {
	return &Store{dir: s.dir, user: hash, shared: s.root(), db: s.db}
}

// userNS is the prefix of the users' namespaces in a shared store.
const userNS = tokenNS + ":user:"

// ListUsers returns every user's own sign-ins, by server and user: the
// files under each server's users directory, or the users' namespaces of
// the shared store.
func (s *Store) ListUsers() ([]UserRecord, error) {
	list := s.fileUsers
	if s.db != nil {
		list = s.sharedUsers
	}
	out, err := list()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b UserRecord) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.User, b.User), strings.Compare(a.Hash, b.Hash))
	})
	return out, nil
}

// sharedUsers are the records of the users' namespaces of the store.
func (s *Store) sharedUsers() ([]UserRecord, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	lister, ok := s.db.(shared.Namespaces)
	if !ok {
		return nil, errors.New("token store: this store cannot list users")
	}
	nss, err := lister.Namespaces(ctx, userNS)
	if err != nil {
		return nil, err
	}
	var out []UserRecord
	for _, ns := range nss {
		hash := strings.TrimPrefix(ns, userNS)
		recs, err := s.ForUserHash(hash).sharedList(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			out = append(out, UserRecord{Hash: hash, Record: r})
		}
	}
	return out, nil
}

// fileUsers are the records of <dir>/<server>/users/<hash>.sealed.
func (s *Store) fileUsers() ([]UserRecord, error) {
	servers, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []UserRecord
	for _, d := range servers {
		server, err := url.PathUnescape(d.Name())
		if !d.IsDir() || err != nil {
			continue
		}
		users, _ := os.ReadDir(filepath.Join(s.dir, d.Name(), "users")) // none: no user signed in
		for _, u := range users {
			hash, ok := strings.CutSuffix(u.Name(), sealedExt)
			if !ok || strings.HasPrefix(hash, ".") {
				continue
			}
			r, _, err := s.ForUserHash(hash).read(server)
			if errors.Is(err, ErrNoToken) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("the sign-in of user %s: %w", hash, err)
			}
			r.migrate()
			out = append(out, UserRecord{Hash: hash, Record: r})
		}
	}
	return out, nil
}

// MatchUser reports whether the record is of the user named by who: a
// caller's key ("jwt:alice"), a subject or static token's name ("alice",
// of any kind), or the record's hash.
func (u UserRecord) MatchUser(who string) bool {
	if who == "" {
		return false
	}
	if u.Hash == who || u.User == who || strings.HasSuffix(u.User, ":"+who) {
		return true
	}
	for _, key := range []string{who, "jwt:" + who, "token:" + who} {
		if UserHash(key) == u.Hash {
			return true
		}
	}
	return false
}
