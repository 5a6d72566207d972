package inspect

import "bytes"

// redacted is what a secret's value is replaced with.
const redacted = `"[redacted]"`

// redact is src with the value of every member whose key names a secret
// (see secretKey) replaced by "[redacted]", at any depth. It scans the
// text once and decodes nothing, so that recording a message costs about
// a copy (one allocation when there is no secret). src need not be whole:
// a message cut at the size cap is scanned as far as it goes, and a
// secret's value the cut runs into is redacted all the same.
func redact(src []byte) string {
	var dst []byte // nil until there is a secret
	last := 0      // src[last:i] is still to be copied
	for i := 0; i < len(src); i++ {
		q := bytes.IndexByte(src[i:], '"')
		if q < 0 {
			break
		}
		i += q
		end := stringEnd(src, i)
		if end < 0 {
			break // a cut string: nothing after it to hide
		}
		key := src[i+1 : end-1]
		j := skipSpace(src, end)
		if j >= len(src) || src[j] != ':' || !secretKey(key) {
			i = end - 1
			continue
		}
		v := skipSpace(src, j+1)
		if dst == nil {
			dst = make([]byte, 0, len(src)+len(redacted))
		}
		dst = append(dst, src[last:v]...)
		dst = append(dst, redacted...)
		last = valueEnd(src, v)
		i = last - 1
	}
	if dst == nil {
		return string(src)
	}
	return string(append(dst, src[last:]...))
}

// stringEnd is the index just past the string that starts at src[i], a
// quote, or -1 when src ends inside it.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		k := bytes.IndexAny(src[j:], `"\`)
		if k < 0 {
			return -1
		}
		j += k
		if src[j] == '"' {
			return j + 1
		}
		j++ // the escaped character
	}
	return -1
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index just past the JSON value that starts at src[i]
// (len(src) when src ends inside it).
func valueEnd(src []byte, i int) int {
	if i >= len(src) {
		return i
	}
	switch src[i] {
	case '"':
		if end := stringEnd(src, i); end >= 0 {
			return end
		}
		return len(src)
	case '{', '[':
		depth := 0
		for j := i; j < len(src); j++ {
			switch src[j] {
			case '"':
				end := stringEnd(src, j)
				if end < 0 {
					return len(src)
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(src)
	}
	for j := i; j < len(src); j++ {
		switch src[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
	}
	return len(src)
}

// secretKeys are the keys whose values are redacted, compared with case,
// '-' and '_' ignored. Besides these, any key that ends in one of
// secretSuffixes is (progressToken excepted: MCP's progress tokens are
// not secrets, and the inspector shows them).
var secretKeys = map[string]bool{
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
	"password": true, "passwd": true, "passphrase": true, "secret": true, "token": true,
	"apikey": true, "xapikey": true, "privatekey": true, "credentials": true,
}

var secretSuffixes = []string{"token", "secret", "password", "apikey", "privatekey"}

// maxKey bounds the keys looked at: a longer one names no secret here.
const maxKey = 64

// secretKey says whether a member named key (as written, unquoted) holds
// a secret. It allocates nothing: it runs for every key of every message.
func secretKey(key []byte) bool {
	if len(key) > maxKey || len(key) < 5 {
		return false // "token" and "secret" are the shortest
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
