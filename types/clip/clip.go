// Package clip cuts text to a size in bytes without splitting a
// character, for the places that bound what a client or server wrote
// before keeping or showing it.
package clip

import (
	"strings"
	"unicode/utf8"
)

// String is s cut to at most max bytes, at a rune boundary: whole when
// it fits, else a copy of its longest prefix of whole characters within
// max. The copy is what lets a cut string be kept: a prefix that shared
// s's bytes would keep all of s (a client's 4 MiB URI for a 1 KiB span
// attribute).
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}

// Marked is String(s, max) followed by mark when s was cut.
func Marked(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	return String(s, max) + mark
}
