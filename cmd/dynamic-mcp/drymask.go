package main

import (
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// masked is what a secret's value becomes in the dry run's diff.
const masked = "[redacted]"

// maskSecrets is line, a line of a client's config file (JSON, or Codex's
// TOML), with the text of each string that is a secret written literally
// replaced by [redacted]: a string the value of a key named like a secret
// (an env variable GITHUB_TOKEN, a header Authorization), or one that
// looks like a token wherever it is (an arg). What is a secret is what
// import offers to move into the vault (clients.LiteralSecret). The line
// is read alone: a string that runs on to the next line (TOML's """), or
// a value on the line after its key, is not looked into here but by
// maskedLines, which parses the whole file and calls this on each line
// besides.
func maskSecrets(line string) string {
	var b strings.Builder
	last := 0 // line[last:] is still to be copied
	for i := 0; i < len(line); i++ {
		q := line[i]
		if q != '"' && q != '\'' {
			continue
		}
		end := closingQuote(line, i)
		if end < 0 {
			break
		}
		if !keyAfter(line[end+1:]) && clients.LiteralSecret(keyBefore(line[:i]), line[i+1:end]) {
			b.WriteString(line[last : i+1])
			b.WriteString(masked)
			last = end
		}
		i = end
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// closingQuote is the index of the quote that closes the string opened
// at line[open], or -1: a '...' string (TOML's literal string) holds no
// escapes, a "..." string's \" is no end.
func closingQuote(line string, open int) int {
	q := line[open]
	for i := open + 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && q == '"':
			i++
		case line[i] == q:
			return i
		}
	}
	return -1
}

// keyAfter says whether rest, what follows a string, makes it a key
// ("KEY": or "KEY" =).
func keyAfter(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	return rest != "" && (rest[0] == ':' || rest[0] == '=')
}

// keyBefore is the key whose value a string that follows before is
// (before ends in "KEY": or KEY =), or "" for a string that is no key's
// value (an element of args).
func keyBefore(before string) string {
	before = strings.TrimRight(before, " \t")
	if before == "" || before[len(before)-1] != ':' && before[len(before)-1] != '=' {
		return ""
	}
	before = strings.TrimRight(before[:len(before)-1], " \t")
	if n := len(before); n > 0 && (before[n-1] == '"' || before[n-1] == '\'') {
		if open := strings.LastIndexByte(before[:n-1], before[n-1]); open >= 0 {
			return before[open+1 : n-1]
		}
		return ""
	}
	start := len(before)
	for start > 0 && bareKeyChar(before[start-1]) {
		start--
	}
	return before[start:]
}

// bareKeyChar says whether c may be part of a TOML bare key.
func bareKeyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
