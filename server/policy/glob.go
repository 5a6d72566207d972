package policy

import (
	"regexp"
	"strings"
)

// Glob compiles a glob to an anchored RE2 expression: * is any run of
// characters without /, ** any run including /, ? one character; anything
// else matches itself. RE2 runs in linear time, so no pattern can make a
// match backtrack catastrophically. Every glob compiles.
func Glob(pattern string) *regexp.Regexp {
	// RE2 reads text as UTF-8, taking a broken byte for U+FFFD; the
	// pattern does the same.
	pattern = strings.ToValidUTF8(pattern, "\uFFFD")
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				b.WriteString(`.*`)
				i++
			} else {
				b.WriteString(`[^/]*`)
			}
		case '?':
			b.WriteString(`.`)
		default:
			// Copy the whole rune, so multi-byte characters stay intact.
			j := i + 1
			for j < len(pattern) && pattern[j] != '*' && pattern[j] != '?' {
				j++
			}
			b.WriteString(regexp.QuoteMeta(pattern[i:j]))
			i = j - 1
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}
