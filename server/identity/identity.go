// Package identity is who calls the hub over HTTP: the Identity of a
// caller, read from a JWT access token of the authorization server
// http.auth names (Verifier), or the name of the static token it sent.
// The hub keeps it on the caller's session, for the profile its claims
// choose, per-user rate limits, the audit trail, the inspector and traces.
package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	clipText "github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Kind is how a caller proved who it is.
type Kind string

const (
	KindJWT   Kind = "jwt"   // an access token of http.auth's issuer: a JWT, or an opaque token introspected (one person either way)
	KindToken Kind = "token" // a static token of http.token or http.tokens
	KindNone  Kind = "none"  // no token checked (--insecure-no-auth)
)

// Identity is who a caller is. It is small and plain, kept on the
// caller's session, and bounded where it is made (see Bound): what a
// token says is the issuer's, but its size is not trusted.
type Identity struct {
	Kind Kind
	// Subject is the token's subject claim, or the static token's name;
	// a subject longer than MaxText is cut here, for display, and Sum
	// tells it apart.
	Subject string
	// Sum is the SHA-256 (hex) of a subject longer than MaxText, ""
	// for one that fits: the caller's key is made of it (see Key).
	Sum string
	// Name is the name claim, "" when the token has none.
	Name string
	// Groups are the groups claim's values.
	Groups []string
	// Claims are, of the claims http.auth.profiles read, the values some
	// entry names that the token holds, by claim name: enough to choose a
	// profile (see ChooseProfile), bounded by the entries.
	Claims map[string][]string
}

// Bounds of what an Identity keeps of a token (STYLE 15).
const (
	MaxText   = 256 // bytes of each string; longer ones are cut
	MaxValues = 64  // values of a list claim; more are dropped
	MaxClaims = 16  // claims kept for profiles
)

// Key is the caller's key among all callers: the same person twice has
// the same key, two subjects two keys, and a token's subject never
// equals a static token's name. It decides whose a session is, per-user
// rate limits and the audit trail's subject. A subject longer than
// MaxText is keyed on its cut text and its Sum: longer than any key of
// a subject that fits, so never one.
func (id *Identity) Key() string {
	if id == nil {
		return ""
	}
	if id.Sum != "" {
		return string(id.Kind) + ":" + id.Subject + " sha256:" + id.Sum
	}
	return string(id.Kind) + ":" + id.Subject
}

// User is how the caller is shown: the name, else the subject.
func (id *Identity) User() string {
	if id == nil {
		return ""
	}
	if id.Name != "" {
		return id.Name
	}
	return id.Subject
}

// Has reports whether the caller's claim holds value.
func (id *Identity) Has(claim, value string) bool {
	if id == nil {
		return false
	}
	for _, v := range id.Claims[claim] {
		if v == value {
			return true
		}
	}
	return false
}

// clip cuts s to MaxText bytes, at a rune boundary, without control
// characters (which would forge lines in a log) or invisible ones (see
// unseen).
func clip(s string) string {
	return strings.Map(func(r rune) rune {
		if unseen(r) {
			return -1
		}
		return r
	}, clipText.String(s, MaxText))
}

// unseen reports whether r is a character a reader does not see as one:
// a control (C0, DEL, C1), a line or paragraph separator, or a format
// character (zero-width space and joiners, a BOM, bidirectional
// overrides that show what follows reversed), by which one text can be
// made to look like another.
func unseen(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf)
}

// subject reads a token's subject: "" with a reason for one refused.
// One with a character a reader does not see (unseen: a control, a line
// or paragraph separator, a zero-width or bidirectional format
// character) or U+FFFD (what JSON decoding makes of bytes that are not
// UTF-8) is refused rather than cleaned, as two subjects cleaned may be
// one, and one that looks like another's would read as theirs in the
// audit trail; one longer than MaxText is cut for display and keyed on
// its SHA-256.
func subject(raw string) (sub, sum, refused string) {
	if raw == "" {
		return "", "", "has no subject"
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return unseen(r) || r == utf8.RuneError }) {
		return "", "", "has a subject with a control character, an invisible or format one, or invalid UTF-8"
	}
	if len(raw) <= MaxText {
		return raw, "", ""
	}
	h := sha256.Sum256([]byte(raw))
	return clip(raw), hex.EncodeToString(h[:]), ""
}

// person is who claims say the caller is, by the subject and name claims of
// c: an Identity of KindJWT with its Subject, Sum and Name; nil with the
// reason (see subject) for a subject refused.
func person(claims map[string]any, c config.AuthClaims) (*Identity, string) {
	raw, _ := claim(claims, c.Subject).(string)
	sub, sum, refused := subject(raw)
	if refused != "" {
		return nil, refused
	}
	id := &Identity{Kind: KindJWT, Subject: sub, Sum: sum}
	if s, ok := claim(claims, c.Name).(string); ok {
		id.Name = clip(s)
	}
	return id, ""
}

// holds reports whether v, a claim's string or list of strings, holds
// value exactly (never clipped, so that no value is made to match by
// what is cut from it). Every element is compared, however many (the
// token's size bounds them): a profiles entry that narrows what a group
// sees is not escaped by a member with more groups than MaxValues.
func holds(v any, value string) bool {
	switch v := v.(type) {
	case string:
		return v == value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	}
	return false
}

// exact is a claim's strings as they are, at most MaxValues.
func exact(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				if out = append(out, s); len(out) == MaxValues {
					break
				}
			}
		}
		return out
	}
	return nil
}

// values is a claim's strings: a string's one, a list's strings (other
// elements skipped), at most MaxValues, each clipped.
func values(v any) []string {
	out := exact(v) // a new slice: clipped in place
	for i, s := range out {
		out[i] = clip(s)
	}
	return out
}

// claim is the value at path (dotted: ext.groups) in claims, nil when
// there is none.
func claim(claims map[string]any, path string) any {
	if v, ok := claims[path]; ok {
		return v
	}
	head, rest, ok := strings.Cut(path, ".")
	if !ok {
		return nil
	}
	inner, _ := claims[head].(map[string]any)
	if inner == nil {
		return nil
	}
	return claim(inner, rest)
}
