package policy

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Glob is a pattern with the semantics of github.com/bmatcuk/doublestar/v4:
// * is any run of characters without /, ? one character other than /, **
// as a whole path component any number of components (so **/ also matches
// none: **/secret* matches secret.txt), [class] and {alt,ern} as in a
// shell, \ escapes the next character. A glob is matched against the whole
// text; doublestar works on strings without backtracking blowing up.
type Glob struct {
	pattern string
	comps   []string // pattern split at /, for matching a relative path's tails
}

// CompileGlob checks pattern and returns its Glob. The config's parser
// rejects a bad pattern before New sees it.
func CompileGlob(pattern string) (Glob, error) {
	if !doublestar.ValidatePattern(pattern) {
		return Glob{}, doublestar.ErrBadPattern
	}
	return Glob{pattern: pattern, comps: strings.Split(pattern, "/")}, nil
}

// ValidGlob reports whether pattern is a glob CompileGlob accepts.
func ValidGlob(pattern string) bool { return doublestar.ValidatePattern(pattern) }

// Match reports whether s matches the glob as given.
func (g Glob) Match(s string) bool {
	ok, err := doublestar.Match(g.pattern, s)
	return err == nil && ok
}

// String is the pattern.
func (g Glob) String() string { return g.pattern }

// MatchAny reports whether a string argument value may name something the
// glob matches, in any spelling an upstream may take for the same path: as
// given; as a cleaned path (path.Clean, so a trailing / or /. and a/../
// go); and, for a relative path, as a path below any directory, since the
// upstream resolves it against a root the hub does not know (secret.txt is
// taken as **/secret.txt, ../etc/passwd as **/etc/passwd; a tail of the
// pattern that is ** alone does not count, or /home/*/.ssh/** would take
// every relative path). This is the
// reading for deny, log and prompt rules: it errs on the side of matching.
func (g Glob) MatchAny(s string) bool {
	if g.Match(s) {
		return true
	}
	c, ok := cleanPath(s)
	if !ok {
		return false
	}
	if c != s && g.Match(c) {
		return true
	}
	if strings.HasPrefix(c, "/") || hasScheme(c) {
		return false
	}
	// Relative: does some tail of the pattern, beginning after a / and
	// naming more than **, match it? The head can always match some
	// directory the upstream may resolve it against.
	for c == ".." || strings.HasPrefix(c, "../") {
		c = strings.TrimPrefix(strings.TrimPrefix(c, ".."), "/")
	}
	for i := 1; i < len(g.comps); i++ {
		if onlyAnyDirs(g.comps[i:]) {
			break // a tail of ** alone would take every relative path
		}
		if ok, err := doublestar.Match(strings.Join(g.comps[i:], "/"), c); err == nil && ok {
			return true
		}
	}
	return false
}

func onlyAnyDirs(comps []string) bool {
	for _, c := range comps {
		if c != "**" {
			return false
		}
	}
	return true
}

// MatchAll reports whether a string argument value matches the glob in
// every spelling that counts: as given and as a cleaned path. A relative
// path is matched as given only, since the root the upstream resolves it
// against is unknown. This is the reading for allow rules: it errs on the
// side of not matching.
func (g Glob) MatchAll(s string) bool {
	if !g.Match(s) {
		return false
	}
	c, ok := cleanPath(s)
	return !ok || c == s || g.Match(c)
}

// scheme is a URL's scheme with its //, kept apart when a URL is cleaned.
// Compiled at first use, not at every start.
var scheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\A[A-Za-z][A-Za-z0-9+.-]*://`) })

func hasScheme(s string) bool { return scheme().MatchString(s) }

// cleanPath is s as path.Clean has it, a URL's scheme:// kept in front
// (file:///etc/x/. is file:///etc/x); ok is false for the empty string.
func cleanPath(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if m := scheme().FindString(s); m != "" {
		rest := s[len(m):]
		if rest == "" {
			return s, true
		}
		return m + path.Clean(rest), true
	}
	return path.Clean(s), true
}
