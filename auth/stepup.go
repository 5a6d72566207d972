package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// maxWanted bounds the scopes kept for a new sign-in (Record.Wanted): a
// server that names a new scope on each refusal does not grow the record
// on file without end.
const maxWanted = 32

// StepUpScopes is what a new sign-in asks for after the server refused a
// token granted the scopes have, with challenge, the WWW-Authenticate of
// its 403 insufficient_scope (RFC 6750 §3.1; MCP 2025-11-25,
// authorization, "Scope Challenge Handling"): the union of have and the
// scopes the challenge names, have's first, in order. The challenge is
// the one that refused the call, never a second request's: a re-sent probe
// lost to a slow or closed connection left a client with no scope to add,
// and it signed in again at the scope it had (found by the conformance
// suite's scope-step-up run beside a second copy of the suite). An error
// when the challenge names no scope the sign-in lacks: a sign-in at the
// same scope would only be refused again.
func StepUpScopes(have []string, challenge string) ([]string, error) {
	m := scopeParam().FindStringSubmatch(challenge)
	if m == nil {
		return nil, fmt.Errorf("the server refused the token for want of a scope but named none (WWW-Authenticate: %s)", challenge)
	}
	union := unionScopes(have, strings.Fields(m[1])...)
	if len(union) == len(have) {
		return nil, fmt.Errorf("the server refused the token for want of scope %q, which the sign-in holds (%s): signing in again at the same scope would not help", m[1], strings.Join(have, " "))
	}
	return union, nil
}

// unionScopes is have with each scope of add that it lacks appended, in
// order. have itself is never written to.
func unionScopes(have []string, add ...string) []string {
	union := slices.Clip(have)
	for _, s := range add {
		if !slices.Contains(union, s) {
			union = append(union, s)
		}
	}
	return union
}

// Newer takes up a sign-in on file newer than refused, the Authorization
// header a call refused for want of a scope carried: the user signed in
// again since (`auth login`, another process, or a user's sign-in link),
// at the scope the refusal asked for. A server keeps the old token good
// until it expires, and would go on refusing calls made with it. True
// when the next call carries another token than refused.
func (s *Source) Newer(refused string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refused != "" && refused != "Bearer "+s.rec.AccessToken {
		return true // another call took it up
	}
	disk, err := s.store.Load(s.rec.Server, s.rec.URL)
	if err != nil || disk.AccessToken == s.rec.AccessToken {
		return false
	}
	s.rec = disk
	return true
}

// StepUp keeps, after the server refused a call made with this source's
// token for want of a scope (challenge, the 403's WWW-Authenticate), the
// scopes a new sign-in must ask for in the record on file (Record.Wanted),
// where `auth login` and a user's next sign-in link find them, and
// returns them. A record on file newer than this source's (signed in
// again since) is left as it is: its scopes are another matter. A record
// that keeps them all already is not written again (nor, when this
// source wrote it, locked): a server that refuses every call does not
// make each take the store's lock, holding up the others' Header. At most
// maxWanted are kept, the oldest wanted dropped first.
func (s *Source) StepUp(ctx context.Context, challenge string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want, err := StepUpScopes(s.rec.Scopes, challenge)
	if err != nil {
		return nil, err
	}
	if holds := unionScopes(s.rec.Wanted, want...); len(holds) == len(s.rec.Wanted) {
		return slices.Clone(s.rec.Wanted), nil
	}
	fresh := len(want) // the scopes held and the challenge's, kept whatever maxWanted says
	err = s.store.withLock(ctx, s.rec.Server, func(l lockedRecord) error {
		disk, err := l.load(s.rec.URL)
		if err != nil {
			return err
		}
		if disk.AccessToken != s.rec.AccessToken {
			return nil
		}
		s.rec = disk
		if holds := unionScopes(disk.Wanted, want...); len(holds) == len(disk.Wanted) {
			want = slices.Clone(disk.Wanted)
			return nil
		}
		want = unionScopes(want, disk.Wanted...)
		if n := max(maxWanted, fresh); len(want) > n {
			want = want[:n]
		}
		disk.Wanted = want
		return l.write(disk)
	})
	if err != nil {
		return want, fmt.Errorf("keep the scopes to sign in with: %w", err)
	}
	return want, nil
}
