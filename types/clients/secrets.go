package clients

import (
	"regexp"
	"strings"
	"sync"
)

// tokenValue matches values that are credentials by their look, whatever
// they are named: the prefixes of GitHub (ghp_, gho_, ghu_, ghs_, ghr_,
// github_pat_), OpenAI and Anthropic (sk-), Slack (xoxb-, xoxp-, ...)
// and AWS access keys (AKIA), and a bearer token written out.
// Compiled at first use, not at every start.
var tokenValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b|(?i)\bbearer\s+[^\s$]{8,}`)
})

// LiteralSecret reports whether value, of an env variable, header, arg or
// URL named key ("" for an arg or URL), is a secret written literally: named
// like one (SecretName), or looking like a token. A value that refers to a
// ${VAR} or ${secret:NAME} is none. Import and validate both ask it: what
// import would offer to move into the vault, validate warns about.
func LiteralSecret(key, value string) bool {
	if value == "" || strings.Contains(value, "${") {
		return false
	}
	return key != "" && SecretName(key) || tokenValue().MatchString(value)
}
