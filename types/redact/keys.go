// Package redact is the hub's one place for hiding secrets from what it
// shows and keeps: by key (keys.go: the value of any member named like a
// secret, and the secrets strings hold, as the inspector, the approval
// inbox and the audit show a message), by value (values.go: every
// resolved ${secret:NAME} of the config, at any depth of JSON, in what
// upstreams answer, why they failed and the hub's log), and the log
// handler that applies the second to every record (log.go).
package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// redacted is what a secret's value is replaced with; redactedText is
// what a secret inside a string becomes.
const (
	redacted     = `"[redacted]"`
	redactedText = `[redacted]`
)

// JSON is src with the value of every member whose key names a secret
// (see secretKey) replaced by "[redacted]", at any depth, and the secrets
// strings hold (see stringSecrets) replaced by [redacted] within them. It
// scans the text once and decodes nothing, so that recording a message
// costs about a copy (one allocation when there is no secret). src need
// not be whole: a message cut at the size cap is scanned as far as it
// goes, and a secret's value the cut runs into is redacted all the same.
func JSON(src []byte) string {
	var dst []byte // nil until there is a secret
	last := 0      // src[last:i] is still to be copied
	var scratch [4]span
	// inside replaces the secrets of the string whose text starts at
	// src[from] (after its opening quote) and ends before src[to].
	inside := func(from, to int) {
		for _, sp := range stringSecrets(src[from:to], scratch[:0]) {
			if dst == nil {
				dst = make([]byte, 0, len(src)+len(redacted))
			}
			dst = append(dst, src[last:from+sp.from]...)
			dst = sp.replace(dst)
			last = from + sp.to
		}
	}
	for i := 0; i < len(src); i++ {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			break
		}
		i += q
		end, _ := jsonrpc.SkipString(src, i)
		if end < 0 {
			inside(i+1, len(src)) // a cut string: what it holds so far
			break
		}
		key := src[i+1 : end-1]
		j := jsonrpc.SkipSpace(src, end)
		if j >= len(src) || src[j] != ':' || !secretKey(key) {
			inside(i+1, end-1)
			i = end - 1
			continue
		}
		v := jsonrpc.SkipSpace(src, j+1)
		if dst == nil {
			dst = make([]byte, 0, len(src)+len(redacted))
		}
		dst = append(dst, src[last:v]...)
		dst = append(dst, redacted...)
		if last = jsonrpc.SkipValue(src, v); last < 0 {
			last = len(src) // a value the cut runs into: all of it
		}
		i = last - 1
	}
	if dst == nil {
		return string(src)
	}
	return string(append(dst, src[last:]...))
}

// Text is s, a text such as an error's message or a line of a
// server's stderr, with the secrets it holds replaced (see stringSecrets).
func Text(s string) string {
	raw, err := jsonrpc.Marshal(s)
	if err != nil {
		return redactedText
	}
	out := JSON(raw)
	if out == string(raw) {
		return s
	}
	var t string
	if json.Unmarshal([]byte(out), &t) != nil {
		return redactedText
	}
	return t
}

// secretKeys are the keys whose values are redacted, compared with case,
// '-' and '_' ignored. Besides these, any key that ends in one of
// secretSuffixes is (progressToken excepted: MCP's progress tokens are
// not secrets, and the inspector shows them; and PWD and OLDPWD as
// written, the shell's working directories: pwd, dbPwd and oldPwd are
// passwords).
var secretKeys = map[string]bool{
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
	"password": true, "passwd": true, "passphrase": true, "secret": true, "token": true,
	"apikey": true, "xapikey": true, "privatekey": true, "credentials": true,
	"pwd": true,
}

// secretSuffixes end the names of secrets: GITHUB_TOKEN, client_secret,
// aws_secret_access_key, sessionKey, ssh_key, db_pwd. A name that merely
// holds one of them elsewhere (tokenizer, passwordless, keyboard) and one
// that ends in a plural (max_tokens) is no secret; neither is "key" alone
// (sortKey, primaryKey, an idempotency key), only the kinds of key named
// here.
var secretSuffixes = []string{
	"token", "secret", "password", "passwd", "pwd", "apikey", "privatekey",
	"secretkey", "accesskey", "sessionkey", "sshkey", "signingkey", "encryptionkey",
	"masterkey", "accountkey",
}

// maxKey is how much of a key is looked at: its last maxKey bytes. A
// longer key is judged by its end, as the suffix rule judges every key
// (a 200-byte name ending in _api_key is a secret, as api_key is), so
// that no key is too long to be redacted; its end cannot be one of the
// exact names of secretKeys, which are all shorter. The bound keeps the
// look at a key free of allocation.
const maxKey = 64

// secretKey says whether a member named key (as written, unquoted) holds
// a secret. A key written with escapes ("api\u005fkey") is read as JSON
// reads it. It allocates nothing for a key without escapes: it runs for
// every key of every message.
func secretKey(key []byte) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return secretName(key)
	}
	var s string // decoded whole, however long: the look is at its end
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
		return false
	}
	return secretName([]byte(s))
}

// secretName says whether a member or variable named name (as read, no
// escapes) holds a secret.
func secretName(key []byte) bool {
	if len(key) < 3 {
		return false // "pwd" is the shortest
	}
	if len(key) > maxKey {
		key = key[len(key)-maxKey:] // see maxKey
	}
	if string(key) == "PWD" || string(key) == "OLDPWD" {
		return false // the shell's working directories, in every environment
	}
	var buf [maxKey]byte
	n := 0
	for _, c := range key {
		switch {
		case c == '-' || c == '_':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	k := buf[:n]
	if secretKeys[string(k)] { // no allocation: the compiler looks up without one
		return true
	}
	if string(k) == "progresstoken" {
		return false
	}
	for _, suf := range secretSuffixes {
		if len(k) >= len(suf) && string(k[len(k)-len(suf):]) == suf {
			return true
		}
	}
	return false
}

// span is a part of a string's text, s[from:to], to be redacted. It
// becomes [redacted] when quotes is 0. Otherwise the part is a value of
// JSON held in the string (a tool's result whose text is JSON), whose
// quotes are written as quotes backslashes and a quote (\" once held,
// \\\" twice), and it becomes the string "[redacted]" quoted so: the
// JSON it was in stays JSON.
type span struct{ from, to, quotes int }

// replace appends to dst what the span becomes.
func (sp span) replace(dst []byte) []byte {
	if sp.quotes == 0 {
		return append(dst, redactedText...)
	}
	quote := func() {
		for range sp.quotes {
			dst = append(dst, '\\')
		}
		dst = append(dst, '"')
	}
	quote()
	dst = append(dst, redactedText...)
	quote()
	return dst
}

// stringSecrets appends to out the parts of s, the text of a JSON string
// as written (escapes and all, perhaps cut short), that are secrets:
//
//   - the password of a URL's user info (https://user:[redacted]@host),
//     or the whole user info when it has none and looks like a token
//     (see credential: https://[redacted]@github.com, not ssh://git@…);
//   - the value of name=value where name is a secret key (see
//     secretKey): a URL's query (?access_token=…), a form, a command's
//     flag (--api-key=…), an environment variable (GITHUB_TOKEN=…);
//   - the value of a line "Name: value" where Name is a secret key: a
//     header (Authorization: …), a line of YAML (password: …);
//   - the credentials after Bearer or Basic;
//   - the value of a member whose key is a secret key in JSON the
//     string holds (see memberSecrets): {\"GITHUB_TOKEN\": \"…\"}.
//
// The parts come sorted and do not overlap.
func stringSecrets(s []byte, out []span) []span {
	if len(s) < 7 { // "token=x"
		return out
	}
	// One pass to see which kinds can be there: most strings (names,
	// ids, words) hold none of these bytes, and are left at that.
	var colon, equals, space, quote bool
	for _, c := range s {
		switch c {
		case '"':
			quote = true
		case ':':
			colon = true
		case '=':
			equals = true
		case ' ':
			space = true
		}
	}
	base := len(out)
	if colon {
		out = urlSecrets(s, out)
		out = lineSecrets(s, out)
		if quote {
			out = memberSecrets(s, out)
		}
	}
	if equals {
		out = assignSecrets(s, out)
	}
	if space && len(s) >= len("basic ")+8 {
		out = schemeSecrets(s, out)
	}
	if len(out)-base < 2 {
		return out
	}
	found := out[base:]
	slices.SortFunc(found, func(a, b span) int { return a.from - b.from })
	merged := found[:1]
	for _, sp := range found[1:] {
		if top := &merged[len(merged)-1]; sp.from <= top.to {
			if sp.from == top.from && sp.quotes > top.quotes {
				top.quotes = sp.quotes // a whole value: it becomes a string
			}
			top.to = max(top.to, sp.to)
		} else {
			merged = append(merged, sp)
		}
	}
	return out[:base+len(merged)]
}

// memberSecrets finds, in JSON held as text in the string (its quotes
// escaped: \"key\": \"value\"), the values of members whose key is a
// secret key (see secretName): a string's text, or a whole number,
// literal, object or array (which become the string "[redacted]"). JSON
// held once, twice and three times (quotes after 1, 3 and 7 backslashes)
// is looked into, each depth apart.
func memberSecrets(s []byte, out []span) []span {
	for _, q := range [...]string{`\"`, `\\\"`, `\\\\\\\"`} {
		if !bytes.Contains(s, []byte(q)) {
			break
		}
		out = heldMembers(s, len(q)-1, out)
	}
	return out
}

// heldMembers is memberSecrets for JSON quoted by n backslashes. It reads
// the held JSON as a sequence of strings, each opened by a quote after n
// backslashes and closed by one of the same depth (see heldQuoteAt); a
// key is a string followed by a colon. A key written with escapes is not
// looked into.
func heldMembers(s []byte, n int, out []span) []span {
	for k := 0; k < len(s); {
		p := bytes.IndexByte(s[k:], '"')
		if p < 0 {
			return out
		}
		p += k
		if backslashes(s, p) != n {
			k = p + 1 // not a quote that opens a string of this depth
			continue
		}
		end := heldQuote(s, p+1, n) // the closing quote's first backslash
		if end < 0 {
			return out // a cut string
		}
		key := s[p+1 : end]
		k = end + n + 1
		c := heldSpace(s, k)
		if c >= len(s) || s[c] != ':' || bytes.IndexByte(key, '\\') >= 0 || !secretName(key) {
			continue
		}
		v := heldSpace(s, c+1)
		from, to, quotes := heldValue(s, v, n)
		if to <= from {
			continue // no value, or an empty string
		}
		out = append(out, span{from, to, quotes})
		k = to
		if quotes == 0 {
			k += n + 1 // past the string's closing quote
		}
	}
	return out
}

// backslashes is how many backslashes are just before s[i].
func backslashes(s []byte, i int) int {
	n := 0
	for i-1-n >= 0 && s[i-1-n] == '\\' {
		n++
	}
	return n
}

// heldQuote is the index of the first of the n backslashes before the
// next quote from s[i] of held JSON quoted by n backslashes, or -1.
func heldQuote(s []byte, i, n int) int {
	for i < len(s) {
		q := bytes.IndexByte(s[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		if heldQuoteAt(s, q, n) && q-n >= i {
			return q - n
		}
		i = q + 1
	}
	return -1
}

// heldQuoteAt says whether s[q], a quote, is one of held JSON quoted by n
// backslashes (2^depth-1): after n of them, or after n and the escaped
// backslashes that end a held string (\"a\\\\\" holds "a\\"), but not after
// the 2n+1 of a quote inside a held string (\"say \\\"hi\\\"\").
func heldQuoteAt(s []byte, q, n int) bool {
	b := backslashes(s, q)
	return b >= n && (b-n)%(2*n+2) == 0
}

// heldSpace skips the white space of held JSON from s[i]: spaces, and the
// escapes of new lines, returns and tabs (\n, or \\n deeper).
func heldSpace(s []byte, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ':
			i++
		case s[i] == '\\':
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if j == len(s) || (j-i)%2 == 0 || s[j] != 'n' && s[j] != 'r' && s[j] != 't' {
				return i
			}
			i = j + 1
		default:
			return i
		}
	}
	return i
}

// heldValue is the part of s to redact for the value of held JSON, quoted
// by n backslashes, that starts at s[v]: a string's text (quotes 0), or a
// whole other value (quotes n); to is len(s) when s ends inside it.
func heldValue(s []byte, v, n int) (from, to, quotes int) {
	if v >= len(s) {
		return v, v, 0
	}
	if s[v] == '\\' && v+n < len(s) && s[v+n] == '"' && backslashes(s, v+n) == n {
		if end := heldQuote(s, v+n+1, n); end >= 0 {
			return v + n + 1, end, 0
		}
		return v + n + 1, len(s), 0
	}
	switch s[v] {
	case '{', '[':
		depth := 0
		for j := v; j < len(s); j++ {
			switch s[j] {
			case '"':
				if heldQuoteAt(s, j, n) {
					end := heldQuote(s, j+1, n)
					if end < 0 {
						return v, len(s), n
					}
					j = end + n
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return v, j + 1, n
				}
			}
		}
		return v, len(s), n
	}
	// A number or a literal; anything else is not JSON ("password": here).
	w := v
	for w < len(s) && strings.IndexByte(",}] \\\"", s[w]) < 0 {
		w++
	}
	switch lit := string(s[v:w]); {
	case lit == "true" || lit == "false" || lit == "null":
	case strings.IndexByte("-0123456789", s[v]) >= 0 && strings.Trim(lit, "-+.eE0123456789") == "":
	default:
		return v, v, 0
	}
	return v, w, n
}

// urlSecrets finds the user info of URLs: scheme://user:password@host.
func urlSecrets(s []byte, out []span) []span {
	for k := 0; ; {
		p := bytes.Index(s[k:], []byte("://"))
		if p < 0 {
			return out
		}
		start := k + p + 3
		end := start
		for end < len(s) && strings.IndexByte("/?#\\ \t\"'<>", s[end]) < 0 {
			end++
		}
		if at := bytes.LastIndexByte(s[start:end], '@'); at > 0 {
			if c := bytes.IndexByte(s[start:start+at], ':'); c >= 0 {
				if c+1 < at {
					out = append(out, span{from: start + c + 1, to: start + at})
				}
			} else if credential(s[start : start+at]) { // a token as the user: not "git"
				out = append(out, span{from: start, to: start + at})
			}
		}
		k = end
	}
}

// nameChar says whether c may be part of a name in name=value or a
// "Name: value" line.
func nameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// nameStart is where the name that ends before s[end] starts: back over
// name characters, but not into an escape such as \n, whose letter is no
// part of the name.
func nameStart(s []byte, end int) int {
	n := end
	for n > 0 && nameChar(s[n-1]) {
		n--
	}
	if n < end && escaped(s, n) {
		n++
	}
	return n
}

// escaped says whether s[i] is the character of an escape: after an odd
// number of backslashes.
func escaped(s []byte, i int) bool {
	n := 0
	for i-1-n >= 0 && s[i-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// assignSecrets finds the values of name=value where name is a secret key.
func assignSecrets(s []byte, out []span) []span {
	return keyedSecrets(s, '=', out, nil, assignedValue)
}

// keyedSecrets finds the values after each sep in s whose name (just
// before it) is a secret key and, with at, stands where at says one may:
// value says where the value that starts at s[v] is.
func keyedSecrets(s []byte, sep byte, out []span, at func(s []byte, n int) bool, value func(s []byte, v int) (from, to int)) []span {
	for k := 0; k < len(s); {
		e := bytes.IndexByte(s[k:], sep)
		if e < 0 {
			return out
		}
		e += k
		k = e + 1
		n := nameStart(s, e)
		if !secretName(s[n:e]) || at != nil && !at(s, n) {
			continue
		}
		if v, w := value(s, e+1); w > v {
			out = append(out, span{from: v, to: w})
			k = w
		}
	}
	return out
}

// assignedValue is where the value that starts at s[v] is: up to a
// separator (& , ; or white space), or between \" and \".
func assignedValue(s []byte, v int) (from, to int) {
	if v+1 < len(s) && s[v] == '\\' && s[v+1] == '"' {
		if c := bytes.Index(s[v+2:], []byte(`\"`)); c >= 0 {
			return v + 2, v + 2 + c
		}
		return v + 2, len(s)
	}
	w := v
	for w < len(s) {
		c := s[w]
		if c == '&' || c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' {
			break
		}
		if c == '\\' {
			if w+1 < len(s) && strings.IndexByte(`nrt"`, s[w+1]) >= 0 {
				break
			}
			w += 2
			continue
		}
		w++
	}
	return v, min(w, len(s))
}

// lineSecrets finds the values of lines "Name: value" whose Name is a
// secret key (after leading spaces): headers, YAML.
func lineSecrets(s []byte, out []span) []span {
	return keyedSecrets(s, ':', out, lineStart, lineValue)
}

// lineValue is where the value of a line's "Name: value" that starts at
// s[v] is: after its spaces, up to the line's end (before the next \n or
// \r escape).
func lineValue(s []byte, v int) (from, to int) {
	for v < len(s) && s[v] == ' ' {
		v++
	}
	end := v
	for end < len(s) {
		if s[end] == '\\' {
			if end+1 < len(s) && (s[end+1] == 'n' || s[end+1] == 'r') {
				break
			}
			end++
		}
		end++
	}
	return v, min(end, len(s))
}

// lineStart says whether only spaces are between the start of a line and
// s[i].
func lineStart(s []byte, i int) bool {
	for i > 0 {
		switch {
		case s[i-1] == ' ':
			i--
		case i >= 2 && s[i-2] == '\\' && !escaped(s, i-2) && (s[i-1] == 't'):
			i -= 2
		case i >= 2 && s[i-2] == '\\' && !escaped(s, i-2) && (s[i-1] == 'n' || s[i-1] == 'r'):
			return true
		default:
			return false
		}
	}
	return true
}

// schemes are what may come before credentials: "bearer " and "basic ",
// found by their tails in lower or upper case (the first letter is
// checked apart).
var schemes = [][]byte{[]byte("earer "), []byte("EARER "), []byte("asic "), []byte("ASIC ")}

// schemeSecrets finds the credentials after Bearer or Basic that look
// like credentials (see credential: "bearer tokens" or "basic
// information" stay).
func schemeSecrets(s []byte, out []span) []span {
	for _, tail := range schemes {
		for k := 0; k < len(s); {
			p := bytes.Index(s[k:], tail)
			if p < 0 {
				break
			}
			b := k + p - 1 // the B
			k += p + len(tail)
			if b < 0 || s[b] != 'b' && s[b] != 'B' || escaped(s, b) || b > 0 && nameChar(s[b-1]) && !escaped(s, b-1) {
				continue
			}
			t := k
			for t < len(s) && s[t] == ' ' {
				t++
			}
			w := t
			for w < len(s) && tokenChar(s[w]) {
				w++
			}
			if credential(s[t:w]) {
				out = append(out, span{from: t, to: w})
				k = w
			}
		}
	}
	return out
}

// tokenChar says whether c may be part of a token (RFC 7235's token68).
func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0
}

// credential says whether tok looks like a credential rather than a
// word: eight characters or more, with a digit, a symbol or both cases.
func credential(tok []byte) bool {
	if len(tok) < 8 {
		return false
	}
	var digit, symbol, upper, lower bool
	for _, c := range tok {
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		default:
			symbol = true
		}
	}
	return digit || symbol || upper && lower
}
