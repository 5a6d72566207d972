package redact

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
		// A key written with escapes is the key JSON reads.
		{"escaped key", `{"api\u005fkey":"k1","\u0070assword":"p","to\u006ben":1}`,
			`{"api\u005fkey":"[redacted]","\u0070assword":"[redacted]","to\u006ben":"[redacted]"}`},
		{"escaped key, not a secret", `{"progress\u0054oken":1,"ma\u0078Tokens":2}`, `{"progress\u0054oken":1,"ma\u0078Tokens":2}`},
		// Secrets inside strings: URLs, assignments, header lines, schemes.
		{"url user info", `{"url":"https://bob:hunter2@db.example/x?y=1"}`, `{"url":"https://bob:[redacted]@db.example/x?y=1"}`},
		{"url token as user", `["https://ghp_abc123@github.com/o/r.git"]`, `["https://[redacted]@github.com/o/r.git"]`},
		{"url plain user", `["ssh://git@github.com/o/r.git"]`, `["ssh://git@github.com/o/r.git"]`},
		{"url query", `{"u":"https://h/cb?code=1&access_token=abc.def&state=s"}`, `{"u":"https://h/cb?code=1&access_token=[redacted]&state=s"}`},
		{"env and flags", `{"args":["--api-key=sk-1","GITHUB_TOKEN=ghp_x y","PATH=/bin","--token","x"]}`,
			`{"args":["--api-key=[redacted]","GITHUB_TOKEN=[redacted] y","PATH=/bin","--token","x"]}`},
		{"quoted assignment", `{"h":"Digest token=\"a b\", realm=\"r\""}`, `{"h":"Digest token=\"[redacted]\", realm=\"r\""}`},
		{"after a newline escape", `{"env":"A=1\nAPI_KEY=zz\nB=2"}`, `{"env":"A=1\nAPI_KEY=[redacted]\nB=2"}`},
		{"header lines", `{"raw":"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc\r\nCookie: s=1; t=2\r\n"}`,
			`{"raw":"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: [redacted]\r\nCookie: [redacted]\r\n"}`},
		{"yaml", `{"text":"db:\n  user: bob\n  password: hunter2\n"}`, `{"text":"db:\n  user: bob\n  password: [redacted]\n"}`},
		{"header pair", `{"headers":[["Authorization","Bearer eyJhbGciOi.x-y"]]}`, `{"headers":[["Authorization","Bearer [redacted]"]]}`},
		{"schemes in text", `{"m":"401: sent basic dXNlcjpwYXNz and bearer 0123456789"}`, `{"m":"401: sent basic [redacted] and bearer [redacted]"}`},
		{"prose stays", `{"d":"Send a bearer token. Basic information, token: see docs, max_tokens is 5"}`,
			`{"d":"Send a bearer token. Basic information, token: see docs, max_tokens is 5"}`},
		{"a key that is a url", `{"https://u:p@h":1}`, `{"https://u:[redacted]@h":1}`},
		{"cut inside a string", `{"u":"https://h/?token=abcdef`, `{"u":"https://h/?token=[redacted]`},
		// The common spellings of secrets' names.
		{"spellings", `{"aws_secret_access_key":"a","sessionKey":"b","ssh_key":"c","pwd":"d","GITHUB_TOKEN":"e","PASSWORD":"f","db_pwd":"g","oldPwd":"h","secretKey":"i","signing-key":"j"}`,
			`{"aws_secret_access_key":"[redacted]","sessionKey":"[redacted]","ssh_key":"[redacted]","pwd":"[redacted]","GITHUB_TOKEN":"[redacted]","PASSWORD":"[redacted]","db_pwd":"[redacted]","oldPwd":"[redacted]","secretKey":"[redacted]","signing-key":"[redacted]"}`},
		{"words that hold a secret's name stay", `{"keyboard":"us","tokenizer":"cl100k","passwordless":"sign in with a link, no password","max_tokens":5,"sortKey":"a","key":"k","PWD":"/home/u","OLDPWD":"/"}`,
			`{"keyboard":"us","tokenizer":"cl100k","passwordless":"sign in with a link, no password","max_tokens":5,"sortKey":"a","key":"k","PWD":"/home/u","OLDPWD":"/"}`},
		// JSON held as text in a string: a tool's result.
		{"json text", `{"content":[{"type":"text","text":"{\n  \"GITHUB_TOKEN\": \"ghp_abc\",\n  \"PATH\": \"/bin\",\n  \"PASSWORD\": \"hunter2\"\n}"}]}`,
			`{"content":[{"type":"text","text":"{\n  \"GITHUB_TOKEN\": \"[redacted]\",\n  \"PATH\": \"/bin\",\n  \"PASSWORD\": \"[redacted]\"\n}"}]}`},
		{"json text, other values", `{"text":"{\"token\":12,\"secret\":{\"a\":\"}\"},\"apiKey\":[1,2],\"n\":true}"}`,
			`{"text":"{\"token\":\"[redacted]\",\"secret\":\"[redacted]\",\"apiKey\":\"[redacted]\",\"n\":true}"}`},
		{"json text, nested and quoted", `{"text":"{\"a\":{\"b\":[{\"sessionKey\":\"x\\\"y\\\\\"}]},\"c\":\"d\"}"}`,
			`{"text":"{\"a\":{\"b\":[{\"sessionKey\":\"[redacted]\"}]},\"c\":\"d\"}"}`},
		{"json text, a value named as a key", `{"text":"[\"password\", \"token\", {\"k\": \"secret\"}]"}`,
			`{"text":"[\"password\", \"token\", {\"k\": \"secret\"}]"}`},
		{"json text, prose stays", `{"text":"{\"description\": \"passwordless login: a token is mailed\", \"keyboard\": \"us\", \"tokenizer\": \"bpe\", \"PWD\": \"/tmp\"}"}`,
			`{"text":"{\"description\": \"passwordless login: a token is mailed\", \"keyboard\": \"us\", \"tokenizer\": \"bpe\", \"PWD\": \"/tmp\"}"}`},
		{"json text held twice", `{"text":"{\"inner\": \"{\\\"password\\\": \\\"p\\\"}\"}"}`,
			`{"text":"{\"inner\": \"{\\\"password\\\": \\\"[redacted]\\\"}\"}"}`},
		{"json text cut", `{"text":"{\"ssh_key\": \"-----BEGIN`, `{"text":"{\"ssh_key\": \"[redacted]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JSON([]byte(tc.in)); got != tc.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// The texts of errors and stderr lines are redacted as strings are.
func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"connection refused": "connection refused",
		`dial "postgres://app:s3cr3t@db:5432/x": refused`: `dial "postgres://app:[redacted]@db:5432/x": refused`,
		"bad key\nAPI_KEY=abc <&>":                        "bad key\nAPI_KEY=[redacted] <&>",
		`config: {"db_pwd": "s3cr3t", "user": "bob"}`:     `config: {"db_pwd": "[redacted]", "user": "bob"}`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever the JSON, JSON keeps it valid JSON and leaves no value of a
// secret key, at any depth.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		`{"token":"x"}`, `{"a":[{"Password":{"b":[1,2]}}],"c":"d"}`, `[1,"secret",{"secret":null}]`,
		`{"x":"\"token\":1","API-KEY":"\\"}`, `{"progressToken":"p","maxTokens":3}`, `"plain"`,
		`{"api\u005fkey":"x","u":"https://a:b@c/?token=\"d\"&e=f","h":"Authorization: Bearer abcdefgh1\nX: y"}`,
		`{"text":"{\"token\":{\"a\":[1,\"]\"]},\"pwd\":\"x\\\\\",\"b\":2}"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := []byte(s)
		out := []byte(JSON(in))
		if !json.Valid(in) {
			return // a cut body: only that it does not panic
		}
		if !json.Valid(out) {
			t.Fatalf("JSON(%s) = %s: not JSON", in, out)
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
					if secretName([]byte(k)) && e != "[redacted]" {
						t.Fatalf("JSON(%s) = %s: %q kept its value %v", in, out, k, e)
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

// A key longer than 64 bytes is judged by its end, as any key is by the
// suffix rule: no key is too long to be redacted (they were never looked
// at), and a long key whose end names no secret stays.
func TestRedactLongKeys(t *testing.T) {
	long := strings.Repeat("very_long_prefix_", 10)
	escaped := strings.Repeat(`\u0078`, 100)
	for _, tc := range []struct{ name, in, want string }{
		{"member", `{"` + long + `api_key":"k1","n":1}`, `{"` + long + `api_key":"[redacted]","n":1}`},
		{"escaped member", `{"` + escaped + `_password":"p"}`, `{"` + escaped + `_password":"[redacted]"}`},
		{"assignment", `["` + long + `TOKEN=abc def"]`, `["` + long + `TOKEN=[redacted] def"]`},
		{"held JSON", `{"text":"{\"` + long + `secret\": \"s\"}"}`, `{"text":"{\"` + long + `secret\": \"[redacted]\"}"}`},
		{"not a secret", `{"` + long + `name":"x","` + long + `max_tokens":2}`, `{"` + long + `name":"x","` + long + `max_tokens":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JSON([]byte(tc.in)); got != tc.want {
				t.Errorf("redact\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
