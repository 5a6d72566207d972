package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// A value too short to be told from text is left; none to redact is a
// nil redactor, which changes nothing.
func TestSecretsShort(t *testing.T) {
	if s := NewSecrets(map[string]string{"PIN": "12345"}); s != nil {
		t.Fatalf("a 5-byte value redacted: %+v", s)
	}
	var none *Secrets
	if got := none.Text("plain-secret-2"); got != "plain-secret-2" {
		t.Fatalf("nil redactor changed text: %s", got)
	}
	s := NewSecrets(map[string]string{"A": "plain-secret-2", "B": "plain-secret-2-longer"})
	if got := s.Text("a plain-secret-2-longer b plain-secret-2"); got != "a [secret:B] b [secret:A]" {
		t.Fatalf("Text = %s: the longer value first", got)
	}
}

// A value is found however a server's JSON encoder escapes it: Go's
// (\u0026 for "&"), JavaScript's and Python's ("&" as is, "\"" escaped),
// PHP's ("/" as "\/").
func TestSecretsAsEncodersEscape(t *testing.T) {
	secret := `tok/"a&b"+9Zq==`
	c := NewSecrets(map[string]string{"K": secret})
	for name, in := range map[string]string{
		"raw":        "echo " + secret,
		"go":         `{"text":"tok/\"a\u0026b\"+9Zq=="}`,
		"javascript": `{"text":"tok/\"a&b\"+9Zq=="}`,
		"php":        `{"text":"tok\/\"a&b\"+9Zq=="}`,
		"go, php":    `{"text":"tok\/\"a\u0026b\"+9Zq=="}`,
	} {
		got := string(c.Bytes([]byte(in)))
		if !strings.Contains(got, "[secret:K]") || strings.Contains(got, "9Zq") {
			t.Errorf("%s: Bytes(%s) = %s", name, in, got)
		}
	}
}

// A value is found escaped at any depth a JSON-in-text result reaches (a
// tool's JSON quoted by the server's answer: twice; quoted again: three
// times), however each encoder escapes it, and as a URL's query escapes it.
func TestSecretsAtAnyDepth(t *testing.T) {
	secret := `tok/"a&b"\+9Zq==`
	c := NewSecrets(map[string]string{"K": secret})
	quote := func(s string, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	}
	for name, in := range map[string]string{
		"twice":              quote(`{"key":`+quote(secret, false)+`}`, false),
		"three times":        quote(quote(`{"key":`+quote(secret, false)+`}`, false), false),
		"three times, go":    quote(quote(`{"key":`+quote(secret, true)+`}`, true), true),
		"four times, mixed":  quote(quote(quote(`{"key":`+quote(secret, true)+`}`, false), true), false),
		"twice, php":         strings.ReplaceAll(quote(strings.ReplaceAll(quote(secret, false), "/", `\/`), false), "/", `\/`),
		"a url's query":      "Post \"https://h/mcp?key=" + url.QueryEscape(secret) + "\": connection refused",
		"a url's path":       "https://h/" + url.PathEscape(secret) + "/mcp",
		"a url's query, raw": "https://h/mcp?key=" + secret,
	} {
		got := string(c.Bytes([]byte(in)))
		if !strings.Contains(got, "[secret:K]") || strings.Contains(got, "9Zq") {
			t.Errorf("%s: Bytes(%s) = %s", name, in, got)
		}
	}
	// A value no encoder changes has one form, whatever the depth.
	if forms := secretForms("plain-secret-2"); len(forms) != 1 {
		t.Errorf("forms of a plain value: %q", forms)
	}
}
