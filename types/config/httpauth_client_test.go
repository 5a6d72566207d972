package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// http.auth.client_id (and its secret, ${VAR} substituted) is read; a
// secret without a client is an error naming its line; the secret is
// never logged.
func TestHTTPAuthClientID(t *testing.T) {
	const rest = "groups:\n  g: { description: d, command: echo }\n"
	t.Setenv("HUB_OIDC_SECRET", "s3cret-of-the-hub")
	cfg, err := Parse("c.yaml", strings.NewReader(`http:
  auth:
    issuer: https://id.example/
    audience: https://hub.example/mcp
    client_id: hub-sign-in
    client_secret: ${HUB_OIDC_SECRET}
`+rest))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.HTTP.Auth; a.ClientID != "hub-sign-in" || a.ClientSecret != "s3cret-of-the-hub" {
		t.Errorf("parsed: %+v", a)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "auth", *cfg.HTTP.Auth)
	if strings.Contains(logged.String(), "s3cret") || !strings.Contains(logged.String(), "hub-sign-in") {
		t.Errorf("logged: %s", logged.String())
	}
	_, err = Parse("c.yaml", strings.NewReader("http:\n  auth:\n    issuer: https://id.example/\n    audience: https://hub.example/mcp\n    client_secret: x\n"+rest))
	if want := "c.yaml:5: http.auth.client_secret: needs client_id"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a secret without a client: %v, want %q", err, want)
	}
	if cfg, _ := Parse("c.yaml", strings.NewReader("http:\n  auth: { issuer: https://id.example/, audience: https://hub.example/mcp }\n"+rest)); cfg.HTTP.Auth.ClientID != "" {
		t.Error(fmt.Sprint("client_id by default: ", cfg.HTTP.Auth.ClientID))
	}
}
