package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no secrets", `{"name":"echo","arguments":{"text":"token"}}`, `{"name":"echo","arguments":{"text":"token"}}`},
		{"top level", `{"password":"hunter2","user":"bob"}`, `{"password":"[redacted]","user":"bob"}`},
		{"any depth and case", `{"a":[{"b":{"Authorization":"Bearer x"}}]}`, `{"a":[{"b":{"Authorization":"[redacted]"}}]}`},
		{"dashes and underscores", `{"x-api-key":"k1","API_KEY":"k2","apiKey":"k3"}`, `{"x-api-key":"[redacted]","API_KEY":"[redacted]","apiKey":"[redacted]"}`},
		{"suffixes", `{"access_token":"a","refreshToken":"b","client_secret":"c","db_password":"d"}`,
			`{"access_token":"[redacted]","refreshToken":"[redacted]","client_secret":"[redacted]","db_password":"[redacted]"}`},
		{"object and array values", `{"cookie":{"a":"b","c":[1,"}"]},"secret":[1,2],"n":1}`, `{"cookie":"[redacted]","secret":"[redacted]","n":1}`},
		{"numbers and literals", `{"token":12345,"Token": null , "ok":true}`, `{"token":"[redacted]","Token": "[redacted]" , "ok":true}`},
		{"spaces", "{\n  \"password\" :\t\"p\"\n}", "{\n  \"password\" :\t\"[redacted]\"\n}"},
		{"escapes in strings", `{"note":"a \"password\": here","token":"x\"y"}`, `{"note":"a \"password\": here","token":"[redacted]"}`},
		{"progress tokens and max tokens stay", `{"_meta":{"progressToken":7},"maxTokens":100}`, `{"_meta":{"progressToken":7},"maxTokens":100}`},
		{"a key named as a value", `["token","password"]`, `["token","password"]`},
		{"cut inside a secret", `{"token":"abcdef`, `{"token":"[redacted]"`},
		{"cut inside a secret object", `{"credentials":{"user":"a","pass`, `{"credentials":"[redacted]"`},
		{"cut after the colon", `{"a":1,"secret":`, `{"a":1,"secret":"[redacted]"`},
		{"cut in a key", `{"a":1,"secr`, `{"a":1,"secr`},
		{"empty", ``, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact([]byte(tc.in)); got != tc.want {
				t.Errorf("redact(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// keep cuts a body at the cap, says so, and redacts what it kept.
func TestKeepCutsAndRedacts(t *testing.T) {
	in := []byte(`{"api_key":"` + strings.Repeat("s", 100) + `","text":"` + strings.Repeat("x", 100) + `"}`)
	b := keep(in, 50)
	if !b.Truncated || b.Size != len(in) || strings.Contains(b.Text, "sss") || b.Text != `{"api_key":"[redacted]"` {
		t.Errorf("kept %+v", b)
	}
	if b := keep(nil, 50); b != nil {
		t.Errorf("nothing kept as %+v", b)
	}
	if b := keep([]byte(`{"a":1}`), 50); b.Truncated || b.Text != `{"a":1}` {
		t.Errorf("kept %+v", b)
	}
}

// Whatever the JSON, redact keeps it valid JSON and leaves no value of a
// secret key, at any depth.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		`{"token":"x"}`, `{"a":[{"Password":{"b":[1,2]}}],"c":"d"}`, `[1,"secret",{"secret":null}]`,
		`{"x":"\"token\":1","API-KEY":"\\"}`, `{"progressToken":"p","maxTokens":3}`, `"plain"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := []byte(s)
		out := []byte(redact(in))
		if !json.Valid(in) {
			return // a cut body: only that it does not panic
		}
		if !json.Valid(out) {
			t.Fatalf("redact(%s) = %s: not JSON", in, out)
		}
		d := json.NewDecoder(bytes.NewReader(out))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					if secretKey([]byte(k)) && e != "[redacted]" && !strings.ContainsAny(k, `\"`) {
						// A key with an escape is matched as written; the
						// decoded one may read differently.
						if raw, _ := json.Marshal(k); string(raw) == `"`+k+`"` {
							t.Fatalf("redact(%s) = %s: %q kept its value %v", in, out, k, e)
						}
					}
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(v)
	})
}
