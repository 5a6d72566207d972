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

// EchoMax is how much of a string a client sent the hub quotes back: in
// an error's message or data, a log line or an audit record. Enough to
// tell which tool, version or task was meant; not so much that a client
// can make the hub write back (and keep) whatever it sent.
const EchoMax = 128

// EchoMark ends a quoted string that was cut, as the audit trail marks
// what it clips.
const EchoMark = "…"

// Echo is s, a string a client sent, as the hub quotes it: at most
// EchoMax bytes, then EchoMark when it was longer.
func Echo(s string) string { return Marked(s, EchoMax, EchoMark) }

// EchoText is a sentence a client wrote, or one quoting what it sent (an
// error message of its, a library's error naming its values), as the hub
// quotes it: at most four times EchoMax bytes, then EchoMark.
func EchoText(s string) string { return Marked(s, 4*EchoMax, EchoMark) }
