package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// MinSecret is the shortest secret value redacted: a shorter one (a PIN,
// "1") would be found in unrelated text and wreck it.
const MinSecret = 6

// Secrets replaces known secret values (the config's resolved
// ${secret:NAME}) in text with [secret:NAME]. text may be JSON, with JSON
// inside it: a value is also found as JSON escapes it, at any depth up to
// maxEscapeDepth, and as a URL's query escapes it; the replacement needs
// no escaping at any depth. A nil *Secrets redacts nothing.
type Secrets struct {
	values []secretValue // longest first, so a secret inside another is not cut apart
}

// secretValue is one resolved secret as Secrets looks for it.
type secretValue struct {
	raw   int      // the value's length, which orders secrets
	forms [][]byte // the value as it may appear (secretForms), longest first
	mark  []byte   // [secret:NAME]
}

// NewSecrets is the redactor of values, name -> value; a value shorter
// than MinSecret is left. None to redact: nil.
func NewSecrets(values map[string]string) *Secrets {
	s := &Secrets{}
	for name, v := range values {
		if len(v) < MinSecret {
			continue
		}
		s.values = append(s.values, secretValue{raw: len(v), forms: secretForms(v), mark: []byte("[secret:" + name + "]")})
	}
	if len(s.values) == 0 {
		return nil
	}
	slices.SortFunc(s.values, func(a, b secretValue) int { return b.raw - a.raw })
	return s
}

// Bytes is text with every value replaced by its [secret:NAME]; text
// itself (not a copy) when there is none.
func (s *Secrets) Bytes(text []byte) []byte {
	if s == nil {
		return text
	}
	for _, sv := range s.values {
		for _, form := range sv.forms {
			if bytes.Contains(text, form) {
				text = bytes.ReplaceAll(text, form, sv.mark)
			}
		}
	}
	return text
}

// Text is Bytes of a string (a log line, an error).
func (s *Secrets) Text(text string) string {
	if s == nil {
		return text
	}
	return string(s.Bytes([]byte(text)))
}

// maxEscapeDepth is how many times over a value is looked for as JSON
// escapes it. Once is a server's answer quoting it; twice a tool's
// JSON-in-text result (the tool encodes it, then the server its text);
// three and four times such text quoted again (a tool passing on another
// tool's result, a log of it). Each depth doubles the backslashes, so a
// form deeper than this is longer than any text that holds it by chance.
const maxEscapeDepth = 4

// maxForms bounds the forms of one value, each looked for in every text:
// a value with both kinds of character that encoders escape their own way
// (one of <>&, and /) has up to four ways at each depth, 129 forms over
// four depths for `tok/"a&b"\+9Zq==`; a base64 value (with / alone) has
// 16, a value with neither one a depth. The shallower are kept first.
const maxForms = 160

// secretForms is v as it appears in text: raw; as the JSON encoders
// servers use escape it, once and again at each depth until escaping
// changes nothing more or maxEscapeDepth; and as a URL's query or path
// escapes it (a url: with the key in its query, quoted by an error).
// Longest first, so a deeper form is replaced whole rather than a
// shallower one inside it.
func secretForms(v string) [][]byte {
	seen := map[string]bool{v: true}
	forms := []string{v}
	add := func(f string) bool {
		if seen[f] || len(forms) >= maxForms {
			return false
		}
		seen[f] = true
		forms = append(forms, f)
		return true
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	level := []string{v}
	for depth := 0; depth < maxEscapeDepth && len(level) > 0; depth++ {
		var next []string
		for _, f := range level {
			for _, e := range jsonEscapes(f) {
				if add(e) {
					next = append(next, e)
				}
			}
		}
		level = next
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	out := make([][]byte, len(forms))
	for i, f := range forms {
		out[i] = []byte(f)
	}
	return out
}

// jsonEscapes are v as the JSON encoders servers use write it inside a
// string, without the quotes: "\"" and "\\" always; "<>&" as \u003c (Go's)
// or not (JavaScript's, Python's); "/" as "\/" (PHP's) or not.
func jsonEscapes(v string) []string {
	var out []string
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) != nil {
			continue
		}
		q := strings.TrimSuffix(b.String(), "\n")
		q = q[1 : len(q)-1]
		out = append(out, q, strings.ReplaceAll(q, "/", `\/`))
	}
	return out
}
